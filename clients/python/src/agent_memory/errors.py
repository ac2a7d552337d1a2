"""The exceptions the client raises: one class per kind of failure, each with the server's
stable ``code``, the HTTP ``status`` and the server's sentence.

>>> try:
...     client.sessions.get("nope")
... except NotFoundError as e:
...     print(e.status, e.code, e.message)
"""

from __future__ import annotations

import builtins
import json
from typing import Any


class AgentMemoryError(Exception):
    """Every error this package raises (``MemoryError`` in the TypeScript client; renamed
    here so that it does not shadow Python's own)."""


class ApiError(AgentMemoryError):
    """The server answered with an error status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        retry_after: float | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status."""
        self.code = code
        """The server's stable code (``internal`` for a body that is not its error shape)."""
        self.message = message
        """The server's sentence."""
        self.retry_after = retry_after
        """Seconds the server asked to wait (``Retry-After``), when it said."""
        self.request_id = request_id
        """The server's request id (``x-request-id``), for its logs."""

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(status={self.status}, code={self.code!r}, message={self.message!r})"


class InvalidInputError(ApiError):
    """400: the request was invalid."""


class UnauthorizedError(ApiError):
    """401: no API key, or an unknown one."""


class ForbiddenError(ApiError):
    """403: the key may not do this."""


class NotFoundError(ApiError):
    """404: no such session, message, block, profile, memory or job."""


class ConflictError(ApiError):
    """409: the id is taken (``already_exists``) or a concurrent change won (``conflict``)."""


class TooLargeError(ApiError):
    """413: the body, a batch or a message is too large."""


class RefusedError(ApiError):
    """422: understood and refused (a read-only block, a block over its budget)."""


class RateLimitedError(ApiError):
    """429: the key's rate was exceeded and the allowed retries ran out."""


class UnavailableError(ApiError):
    """503: busy, timed out, or a backend is unavailable or failed; worth a retry later."""


class NotSupportedError(ApiError):
    """501: this deployment's backends cannot do this."""


class TimeoutError(AgentMemoryError, builtins.TimeoutError):
    """The request did not finish within the client's timeout (also a builtin
    ``TimeoutError``, so ``except TimeoutError`` catches it either way)."""


class ConnectionError(AgentMemoryError, builtins.ConnectionError):
    """The server could not be reached (also a builtin ``ConnectionError``)."""


_BY_CODE: dict[str, type[ApiError]] = {
    "invalid_input": InvalidInputError,
    "unauthorized": UnauthorizedError,
    "forbidden": ForbiddenError,
    "not_found": NotFoundError,
    "already_exists": ConflictError,
    "conflict": ConflictError,
    "too_large": TooLargeError,
    "refused": RefusedError,
    "rate_limited": RateLimitedError,
    "busy": UnavailableError,
    "timeout": UnavailableError,
    "unavailable": UnavailableError,
    "backend_failed": UnavailableError,
    "not_supported": NotSupportedError,
}

_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidInputError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: TooLargeError,
    422: RefusedError,
    429: RateLimitedError,
    501: NotSupportedError,
    503: UnavailableError,
}


def api_error(
    status: int, text: str, *, retry_after: float | None = None, request_id: str | None = None
) -> ApiError:
    """The typed error for a status and the body's text (any body: a proxy's page too)."""
    code, message = "internal", f"HTTP {status}"
    body: Any = None
    try:
        body = json.loads(text)
    except ValueError:
        if text:
            message = f"HTTP {status}: {text[:500]}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        detail = body["error"]
        if isinstance(detail.get("code"), str):
            code = detail["code"]
        if isinstance(detail.get("message"), str):
            message = detail["message"]
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status, ApiError)
    return kind(status, code, message, retry_after=retry_after, request_id=request_id)
