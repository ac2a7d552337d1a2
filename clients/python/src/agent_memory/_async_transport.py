"""The asynchronous HTTP transport (httpx): API keys, timeouts, and the shared retry policy.
The synchronous transport (``_sync_transport.py``) is generated from this file by
``scripts/generate_sync.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx

from ._transport import DEFAULT_BASE_URL, Policy, Query, decode, error_of, params
from .errors import ConnectionError, TimeoutError


class AsyncTransport:
    """The transport over one ``httpx.AsyncClient``."""

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
        self._policy = Policy(base_url, api_key, timeout, max_retries, max_retry_delay, headers)
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
        return decode(response)

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
                params=params(query),
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
            error = error_of(response, (await response.aread()).decode("utf-8", "replace"))
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
                    params=params(query),
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
            error = error_of(response, response.text)
            wait = self._policy.delay(method, attempt, error)
            if wait is None:
                raise error
            await asyncio.sleep(wait)
            attempt += 1
