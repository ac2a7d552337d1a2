"""The HTTP transports (httpx): API keys, timeouts, and bounded retries of 429 and of 503s
that are safe to repeat, after ``Retry-After``. The sync and async transports share every
decision; only the waiting and the sending differ.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import AsyncGenerator, Generator, Mapping
from typing import Any

import httpx

from .errors import ApiError, ConnectionError, TimeoutError, api_error

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


def _error(response: httpx.Response, text: str) -> ApiError:
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


def _params(query: Query | None) -> dict[str, str] | None:
    if not query:
        return None
    out: dict[str, str] = {}
    for key, value in query.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _decode(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    return json.loads(response.content)


class _Policy:
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


class Transport:
    """The synchronous transport over one ``httpx.Client``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_retry_delay: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.Client | None = None,
    ) -> None:
        self._policy = _Policy(base_url, api_key, timeout, max_retries, max_retry_delay, headers)
        self._http = http or httpx.Client()
        self._owned = http is None

    def close(self) -> None:
        """Closes the connection pool (when the transport made it)."""
        if self._owned:
            self._http.close()

    def json(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Sends a request; its JSON answer (``None`` for 204)."""
        response = self._send(method, path, query, body, content, content_type, timeout)
        return _decode(response)

    def stream_lines(
        self, method: str, path: str, *, query: Query | None = None
    ) -> Generator[str, None, None]:
        """The answer's lines, read as they arrive (blank lines skipped); a 429 or 503 before
        the first byte is retried like any other request."""
        url = self._policy.base_url + path
        attempt = 0
        while True:
            request = self._http.build_request(
                method,
                url,
                params=_params(query),
                headers=self._policy.headers,
                timeout=self._policy.timeout,
            )
            try:
                response = self._http.send(request, stream=True)
            except httpx.TimeoutException as e:
                raise TimeoutError(f"no answer from {url} in time") from e
            except httpx.TransportError as e:
                raise ConnectionError(f"could not reach {url}: {e}") from e
            if not response.is_error:
                break
            error = _error(response, response.read().decode("utf-8", "replace"))
            response.close()
            wait = self._policy.delay(method, attempt, error)
            if wait is None:
                raise error
            time.sleep(wait)
            attempt += 1
        try:
            for line in response.iter_lines():
                if line.strip():
                    yield line
        except httpx.TransportError as e:
            raise ConnectionError(f"the answer from {url} was cut short: {e}") from e
        finally:
            response.close()

    def _send(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Any,
        content: bytes | None,
        content_type: str | None,
        timeout: float | None,
    ) -> httpx.Response:
        headers = dict(self._policy.headers)
        if content_type is not None:
            headers["content-type"] = content_type
        url = self._policy.base_url + path
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    method,
                    url,
                    params=_params(query),
                    json=body,
                    content=content,
                    headers=headers,
                    timeout=timeout if timeout is not None else self._policy.timeout,
                )
            except httpx.TimeoutException as e:
                raise TimeoutError(f"no answer from {url} in time") from e
            except httpx.TransportError as e:
                raise ConnectionError(f"could not reach {url}: {e}") from e
            if not response.is_error:
                return response
            error = _error(response, response.text)
            wait = self._policy.delay(method, attempt, error)
            if wait is None:
                raise error
            time.sleep(wait)
            attempt += 1


class AsyncTransport:
    """The asynchronous transport over one ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_retry_delay: float = 30.0,
        headers: Mapping[str, str] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        self._policy = _Policy(base_url, api_key, timeout, max_retries, max_retry_delay, headers)
        self._http = http or httpx.AsyncClient()
        self._owned = http is None

    async def close(self) -> None:
        """Closes the connection pool (when the transport made it)."""
        if self._owned:
            await self._http.aclose()

    async def json(
        self,
        method: str,
        path: str,
        *,
        query: Query | None = None,
        body: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Sends a request; its JSON answer (``None`` for 204)."""
        response = await self._send(method, path, query, body, content, content_type, timeout)
        return _decode(response)

    async def stream_lines(
        self, method: str, path: str, *, query: Query | None = None
    ) -> AsyncGenerator[str, None]:
        """The answer's lines, read as they arrive (blank lines skipped); a 429 or 503 before
        the first byte is retried like any other request."""
        url = self._policy.base_url + path
        attempt = 0
        while True:
            request = self._http.build_request(
                method,
                url,
                params=_params(query),
                headers=self._policy.headers,
                timeout=self._policy.timeout,
            )
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TimeoutException as e:
                raise TimeoutError(f"no answer from {url} in time") from e
            except httpx.TransportError as e:
                raise ConnectionError(f"could not reach {url}: {e}") from e
            if not response.is_error:
                break
            error = _error(response, (await response.aread()).decode("utf-8", "replace"))
            await response.aclose()
            wait = self._policy.delay(method, attempt, error)
            if wait is None:
                raise error
            await asyncio.sleep(wait)
            attempt += 1
        try:
            async for line in response.aiter_lines():
                if line.strip():
                    yield line
        except httpx.TransportError as e:
            raise ConnectionError(f"the answer from {url} was cut short: {e}") from e
        finally:
            await response.aclose()

    async def _send(
        self,
        method: str,
        path: str,
        query: Query | None,
        body: Any,
        content: bytes | None,
        content_type: str | None,
        timeout: float | None,
    ) -> httpx.Response:
        headers = dict(self._policy.headers)
        if content_type is not None:
            headers["content-type"] = content_type
        url = self._policy.base_url + path
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    method,
                    url,
                    params=_params(query),
                    json=body,
                    content=content,
                    headers=headers,
                    timeout=timeout if timeout is not None else self._policy.timeout,
                )
            except httpx.TimeoutException as e:
                raise TimeoutError(f"no answer from {url} in time") from e
            except httpx.TransportError as e:
                raise ConnectionError(f"could not reach {url}: {e}") from e
            if not response.is_error:
                return response
            error = _error(response, response.text)
            wait = self._policy.delay(method, attempt, error)
            if wait is None:
                raise error
            await asyncio.sleep(wait)
            attempt += 1
