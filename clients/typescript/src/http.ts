/**
 * The HTTP transport: one `fetch` per attempt, API keys, per-attempt timeouts, the caller's
 * `AbortSignal`, and bounded retries of 429 and 503 that honour `Retry-After`. It uses only
 * what `fetch` runtimes share (Node 20+, Deno, Bun, edge workers, browsers).
 */
import {
  AbortedError,
  apiError,
  ConnectionError,
  MemoryError,
  TimeoutError,
  type ApiError,
} from "./errors.js";

/** How a client reaches its server. */
export interface ClientOptions {
  /** The server's base URL (default `http://127.0.0.1:8787`, where `memory serve` listens). */
  baseUrl?: string;
  /** The API key (`memory keys new`), sent as `Authorization: Bearer`; none in local mode. */
  apiKey?: string;
  /** Milliseconds one attempt may take before it fails with `TimeoutError` (default 60 000). */
  timeoutMs?: number;
  /** Retries of a 429, or of a 503 the server did not start on (default 2; 0 turns them off). */
  maxRetries?: number;
  /** The longest single wait between attempts, in milliseconds (default 30 000); a
   * `Retry-After` over it is not waited for: the error is thrown at once. */
  maxRetryDelayMs?: number;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** The `fetch` to use (default: the global one). */
  fetch?: typeof fetch;
}

/** Per-call options every method takes. */
export interface RequestOptions {
  /** Cancels the call (any attempt, and any wait between attempts). */
  signal?: AbortSignal;
  /** This call's per-attempt timeout, over the client's. */
  timeoutMs?: number;
}

/** What one request sends. */
export interface Call extends RequestOptions {
  /** Query parameters; `undefined` values are left out. */
  query?: Record<string, string | number | boolean | undefined>;
  /** A JSON body. */
  json?: unknown;
  /** A raw body (it is sent once: a streamed body is never retried). */
  body?: BodyInit;
  /** The raw body's content type. */
  contentType?: string;
}

/** Methods safe to send again after a 503 the server may have started on: a repeated
 * DELETE would answer 404 for a delete that worked, so it is not among them. */
const IDEMPOTENT = new Set(["GET", "HEAD", "PUT"]);

/** One server's transport. */
export class Transport {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    this.baseUrl = (options.baseUrl ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = Math.max(0, options.maxRetries ?? 2);
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.headers = { ...options.headers };
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Sends a request and parses its JSON answer (`undefined` for 204). */
  async json<T>(method: string, path: string, call: Call = {}): Promise<T> {
    const response = await this.send(method, path, call, false);
    if (response.status === 204) return undefined as T;
    const text = await response.text();
    if (text.length === 0) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch (cause) {
      throw new MemoryError(`${method} ${path} answered ${response.status} with a body that is not JSON`, { cause });
    }
  }

  /** Sends a request and returns the response with its body unread (for streams). */
  async stream(method: string, path: string, call: Call = {}): Promise<Response> {
    return this.send(method, path, call, true);
  }

  private url(path: string, query: Call["query"]): string {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.toString();
  }

  private async send(method: string, path: string, call: Call, streaming: boolean): Promise<Response> {
    const url = this.url(path, call.query);
    const headers: Record<string, string> = { accept: "application/json", ...this.headers };
    if (this.apiKey !== undefined) headers.authorization = `Bearer ${this.apiKey}`;
    let body: BodyInit | undefined;
    if (call.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.json);
    } else if (call.body !== undefined) {
      headers["content-type"] = call.contentType ?? "application/octet-stream";
      body = call.body;
    }
    const replayable = !(typeof ReadableStream !== "undefined" && body instanceof ReadableStream);
    const timeoutMs = call.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const response = await this.attempt(url, method, headers, body, timeoutMs, call.signal, streaming);
      if (response.ok) return response;
      const error = await errorOf(response);
      if (attempt >= this.maxRetries || !replayable || !retryable(method, error)) throw error;
      // A server asking for a longer wait than the client allows would only refuse a sooner
      // attempt again: the error comes at once.
      if (error.retryAfterMs !== undefined && error.retryAfterMs > this.maxRetryDelayMs) throw error;
      const backoff = Math.min(250 * 2 ** attempt, this.maxRetryDelayMs);
      await sleep(error.retryAfterMs ?? backoff, call.signal);
    }
  }

  private async attempt(
    url: string,
    method: string,
    headers: Record<string, string>,
    body: BodyInit | undefined,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    streaming: boolean,
  ): Promise<Response> {
    if (signal?.aborted) throw new AbortedError("the request was cancelled", { cause: signal.reason });
    const controller = new AbortController();
    const timer = setTimeout(() => {
      controller.abort();
    }, timeoutMs);
    const onAbort = (): void => {
      controller.abort();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const release = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    try {
      const init: RequestInit & { duplex?: "half" } = { method, headers, signal: controller.signal };
      if (body !== undefined) {
        init.body = body;
        // A streamed upload needs half duplex in fetch runtimes that support it.
        if (typeof ReadableStream !== "undefined" && body instanceof ReadableStream) init.duplex = "half";
      }
      const response = await this.fetchImpl(url, init);
      if (streaming && response.ok && response.body !== null) {
        // The timeout covers the wait for the headers; the caller's signal still cancels
        // the body, until the body ends or is cancelled.
        clearTimeout(timer);
        return new Response(guarded(response.body, release, signal, url), {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      }
      // Read the body inside the timeout, so a stalled body also times out.
      const text = await response.text();
      release();
      return new Response(response.status === 204 ? null : text, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (cause) {
      release();
      if (signal?.aborted) throw new AbortedError("the request was cancelled", { cause });
      // Not the caller's abort: the timer's.
      if (controller.signal.aborted) throw new TimeoutError(`no answer from ${url} within ${timeoutMs} ms`, { cause });
      if (cause instanceof MemoryError) throw cause;
      throw new ConnectionError(`could not reach ${url}: ${describe(cause)}`, { cause });
    }
  }
}

/** `body`, calling `release` once it ends, fails or is cancelled, with its failures typed. */
function guarded(
  body: ReadableStream<Uint8Array>,
  release: () => void,
  signal: AbortSignal | undefined,
  url: string,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (cause) {
        release();
        controller.error(
          signal?.aborted === true
            ? new AbortedError("the request was cancelled", { cause })
            : new ConnectionError(`the answer from ${url} was cut short: ${describe(cause)}`, { cause }),
        );
      }
    },
    async cancel(reason) {
      release();
      await reader.cancel(reason);
    },
  });
}

/** A 429, a 503 the server refused before doing anything (`busy`), or another 503 of a
 * method that is safe to repeat. */
function retryable(method: string, error: ApiError): boolean {
  if (error.status === 429) return true;
  if (error.status !== 503) return false;
  return error.code === "busy" || IDEMPOTENT.has(method);
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a proxy's page): the text goes into the message.
  }
  return apiError(response.status, body, {
    retryAfterMs: retryAfterMs(response.headers.get("retry-after")),
    requestId: response.headers.get("x-request-id") ?? undefined,
  });
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date. */
export function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - Date.now());
}

/** Waits `ms`, or rejects with `AbortedError` when `signal` aborts first. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new AbortedError("the request was cancelled", { cause: signal.reason }));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new AbortedError("the request was cancelled", { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as Error & { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return String(cause);
}

/** A path with each parameter percent-encoded: `path\`/v1/sessions/${id}\``. */
export function path(strings: TemplateStringsArray, ...params: string[]): string {
  return strings.reduce((out, s, i) => out + s + (i < params.length ? encodeURIComponent(params[i] ?? "") : ""), "");
}
