"""What the sync and async HTTP transports share: the retry policy (bounded retries of 429
and of 503s that are safe to repeat, after ``Retry-After``), the typed error of an answer,
query parameters and JSON decoding. The transports themselves are ``_async_transport.py`` and
``_sync_transport.py`` (generated from it).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

from .errors import ApiError, api_error

DEFAULT_BASE_URL = "http://127.0.0.1:8787"
"""Where ``memory serve`` listens by default."""

# A repeated DELETE would answer 404 for a delete that worked: it is not among these.
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT"})

Query = Mapping[str, str | int | float | bool | None]


def retry_after_seconds(header: str | None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date."""
    if header is None:
        return None
    value = header.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_of(response: httpx.Response, text: str) -> ApiError:
    return api_error(
        response.status_code,
        text,
        retry_after=retry_after_seconds(response.headers.get("retry-after")),
        request_id=response.headers.get("x-request-id"),
    )


def _retryable(method: str, error: ApiError) -> bool:
    if error.status == 429:
        return True
    if error.status != 503:
        return False
    return error.code == "busy" or method in _IDEMPOTENT


def params(query: Query | None) -> dict[str, str] | None:
    if not query:
        return None
    out: dict[str, str] = {}
    for key, value in query.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def decode(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    return json.loads(response.content)


class Policy:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int,
        max_retry_delay: float,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max(0, max_retries)
        self.max_retry_delay = max_retry_delay
        self.headers = {"accept": "application/json", **(headers or {})}
        if api_key is not None:
            self.headers["authorization"] = f"Bearer {api_key}"

    def delay(self, method: str, attempt: int, error: ApiError) -> float | None:
        """Seconds to wait before the next attempt, or ``None`` to give up: no attempts
        left, an error not worth repeating, or a server asking for a longer wait than
        ``max_retry_delay`` (retrying sooner would only be refused again)."""
        if attempt >= self.max_retries or not _retryable(method, error):
            return None
        if error.retry_after is not None:
            wait: float = error.retry_after
            return wait if wait <= self.max_retry_delay else None
        backoff: float = 0.25 * 2.0**attempt
        return min(backoff, self.max_retry_delay)
