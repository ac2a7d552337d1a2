/**
 * The errors the client throws: one class per kind of failure, each carrying the server's
 * stable `code`, the HTTP `status` and the server's sentence.
 *
 * ```ts
 * try {
 *   await memory.sessions.get("nope");
 * } catch (e) {
 *   if (e instanceof NotFoundError) console.log(e.code, e.message); // "not_found", "..."
 * }
 * ```
 */

const CODES = [
  "invalid_input",
  "not_found",
  "already_exists",
  "conflict",
  "refused",
  "not_supported",
  "unavailable",
  "backend_failed",
  "busy",
  "timeout",
  "unauthorized",
  "forbidden",
  "rate_limited",
  "too_large",
  "method_not_allowed",
  "unsupported_media_type",
  "not_acceptable",
  "internal",
] as const;

/** The stable codes of the server's error body (`{"error": {"code", "message"}}`). */
export type ErrorCode = (typeof CODES)[number];

const KNOWN_CODES: ReadonlySet<string> = new Set(CODES);

/** Every error this package throws. */
export class MemoryError extends Error {
  override name = "MemoryError";
}

/** The server answered with an error status. */
export class ApiError extends MemoryError {
  override name = "ApiError";
  /** The HTTP status. */
  readonly status: number;
  /** The server's stable code (`internal` when the body was not the server's error shape). */
  readonly code: ErrorCode;
  /** Milliseconds the server asked to wait (`Retry-After`), when it said. */
  readonly retryAfterMs: number | undefined;
  /** The request id the server gave the request (`x-request-id`), for its logs. */
  readonly requestId: string | undefined;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    options: { retryAfterMs?: number | undefined; requestId?: string | undefined } = {},
  ) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
    this.requestId = options.requestId;
  }
}

/** 400: the request was invalid (`invalid_input`). */
export class InvalidInputError extends ApiError {
  override name = "InvalidInputError";
}
/** 401: no API key, or an unknown one. */
export class UnauthorizedError extends ApiError {
  override name = "UnauthorizedError";
}
/** 403: the key may not do this. */
export class ForbiddenError extends ApiError {
  override name = "ForbiddenError";
}
/** 404: no such session, message, block, profile, memory or job. */
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}
/** 409: the id is taken (`already_exists`) or a concurrent change won (`conflict`). */
export class ConflictError extends ApiError {
  override name = "ConflictError";
}
/** 413: the body, a batch or a message is too large. */
export class TooLargeError extends ApiError {
  override name = "TooLargeError";
}
/** 422: the server understood and refused (a read-only block, a block over its budget). */
export class RefusedError extends ApiError {
  override name = "RefusedError";
}
/** 429: the key's rate was exceeded, and the retries the client was allowed ran out. */
export class RateLimitedError extends ApiError {
  override name = "RateLimitedError";
}
/** 503: the server is busy, timed out, or a backend is unavailable or failed; worth a retry later. */
export class UnavailableError extends ApiError {
  override name = "UnavailableError";
}
/** 501: this deployment's backends cannot do this (a typed refusal, never a retry). */
export class NotSupportedError extends ApiError {
  override name = "NotSupportedError";
}

/** The request did not finish within the client's `timeoutMs`. */
export class TimeoutError extends MemoryError {
  override name = "TimeoutError";
}

/** The request was cancelled through the caller's `AbortSignal`. */
export class AbortedError extends MemoryError {
  override name = "AbortedError";
}

/** The server could not be reached (refused connection, DNS, reset). */
export class ConnectionError extends MemoryError {
  override name = "ConnectionError";
}

/** The typed error for a status and the server's body (any body: a proxy's page too). */
export function apiError(
  status: number,
  body: unknown,
  options: { retryAfterMs?: number | undefined; requestId?: string | undefined } = {},
): ApiError {
  let code: ErrorCode = "internal";
  let message = `HTTP ${status}`;
  if (typeof body === "object" && body !== null && "error" in body) {
    const detail = body.error;
    if (typeof detail === "object" && detail !== null) {
      const { code: c, message: m } = detail as { code?: unknown; message?: unknown };
      if (typeof c === "string" && KNOWN_CODES.has(c)) code = c as ErrorCode;
      if (typeof m === "string") message = m;
    }
  } else if (typeof body === "string" && body.length > 0) {
    message = `HTTP ${status}: ${body.slice(0, 500)}`;
  }
  const Kind = errorClass(status, code);
  return new Kind(status, code, message, options);
}

function errorClass(status: number, code: ErrorCode): typeof ApiError {
  switch (code) {
    case "invalid_input":
      return InvalidInputError;
    case "unauthorized":
      return UnauthorizedError;
    case "forbidden":
      return ForbiddenError;
    case "not_found":
      return NotFoundError;
    case "already_exists":
    case "conflict":
      return ConflictError;
    case "too_large":
      return TooLargeError;
    case "refused":
      return RefusedError;
    case "rate_limited":
      return RateLimitedError;
    case "busy":
    case "timeout":
    case "unavailable":
    case "backend_failed":
      return UnavailableError;
    case "not_supported":
      return NotSupportedError;
    default:
      break;
  }
  if (status === 404) return NotFoundError;
  if (status === 429) return RateLimitedError;
  if (status === 503) return UnavailableError;
  return ApiError;
}
