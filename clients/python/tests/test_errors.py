"""Typed errors, API keys, tenants and retries against a real server with a keys file, and
the transport's decisions against small local stubs."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from agent_memory import (
    ApiError,
    AsyncMemoryClient,
    ConflictError,
    ConnectionError,
    InvalidInputError,
    MemoryClient,
    NotFoundError,
    RateLimitedError,
    UnauthorizedError,
    UnavailableError,
    retry_after_seconds,
)

from .conftest import Served, key_entry, serve

ACME = "mk_test_acme_0123456789abcdef"
ZEN = "mk_test_zen_0123456789abcdef"
SLOW = "mk_test_slow_0123456789abcdef"


@pytest.fixture(scope="module")
def keyed() -> Iterator[Served]:
    served = serve(
        '[memory]\nembedder = "none"\n',
        keys=key_entry("acme", ACME)
        + key_entry("zen", ZEN)
        + key_entry("slow", SLOW, "requests_per_second = 1\nburst = 1"),
    )
    yield served
    served.stop()


def test_keys_and_tenants(keyed: Served) -> None:
    with MemoryClient(keyed.base_url) as anonymous:
        anonymous.health()
        with pytest.raises(UnauthorizedError) as refused:
            anonymous.sessions.create()
        assert (refused.value.status, refused.value.code) == (401, "unauthorized")
    with (
        MemoryClient(keyed.base_url, api_key=ACME) as acme,
        MemoryClient(keyed.base_url, api_key=ZEN) as zen,
    ):
        acme.sessions.create(id="shared-name")
        assert acme.sessions.get("shared-name").id == "shared-name"
        with pytest.raises(NotFoundError) as missing:
            zen.sessions.get("shared-name")
        assert missing.value.code == "not_found" and missing.value.request_id
        with pytest.raises(ConflictError):
            acme.sessions.create(id="shared-name")
        with pytest.raises(InvalidInputError):
            acme.sessions.create(id="a\tcontrol character")


async def test_keys_and_tenants_async(keyed: Served) -> None:
    async with (
        AsyncMemoryClient(keyed.base_url, api_key=ACME) as acme,
        AsyncMemoryClient(keyed.base_url, api_key=ZEN) as zen,
    ):
        await acme.sessions.create(id="async-name")
        with pytest.raises(NotFoundError):
            await zen.sessions.get("async-name")
        assert "async-name" not in [s.id async for s in zen.sessions.list()]


def test_a_429_is_retried_after_retry_after(keyed: Served) -> None:
    statuses: list[int] = []
    http = httpx.Client(event_hooks={"response": [lambda r: statuses.append(r.status_code)]})
    strict = MemoryClient(keyed.base_url, api_key=SLOW, max_retries=0, http=http)
    strict.profiles()
    with pytest.raises(RateLimitedError) as limited:
        strict.profiles()
    assert (
        limited.value.status == 429 and limited.value.retry_after and limited.value.retry_after > 0
    )
    statuses.clear()
    patient = MemoryClient(keyed.base_url, api_key=SLOW, max_retries=5, http=http)
    for _ in range(3):
        assert isinstance(patient.profiles(), list)
    assert 429 in statuses and statuses.count(200) == 3, statuses
    http.close()


async def test_a_429_is_retried_async(keyed: Served) -> None:
    statuses: list[int] = []

    async def hook(response: httpx.Response) -> None:
        statuses.append(response.status_code)

    async with httpx.AsyncClient(event_hooks={"response": [hook]}) as http:
        patient = AsyncMemoryClient(keyed.base_url, api_key=SLOW, max_retries=5, http=http)
        for _ in range(3):
            assert isinstance(await patient.profiles(), list)
    assert 429 in statuses and statuses.count(200) == 3, statuses


class Stub:
    """A local HTTP server answering each request with ``answer(hit)``."""

    def __init__(self, answer: Any) -> None:
        stub = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                stub.hits += 1
                status, body, headers = answer(stub.hits)
                data = body.encode()
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_PUT = _any

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_503s_and_other_failures_are_typed() -> None:
    timeout = '{"error": {"code": "timeout", "message": "the request took too long"}}'
    busy = '{"error": {"code": "busy", "message": "too many at once"}}'
    stub = Stub(
        lambda hit: (503, busy, {"retry-after": "0"}) if hit == 1 else (201, '{"id": "s1"}', {})
    )
    try:
        assert MemoryClient(stub.url).sessions.create().id == "s1"
        assert stub.hits == 2, "a busy 503 is retried, POST included"
    finally:
        stub.close()
    stub = Stub(lambda hit: (503, timeout, {"retry-after": "0"}))
    try:
        client = MemoryClient(stub.url, max_retries=2)
        with pytest.raises(UnavailableError):
            client.sessions.create()
        assert stub.hits == 1, "a POST the server may have run is not sent again"
        with pytest.raises(UnavailableError):
            client.sessions.delete("s1")
        assert stub.hits == 2, "nor a DELETE"
        with pytest.raises(UnavailableError):
            client.profiles()
        assert stub.hits == 5, "a GET is retried twice"
    finally:
        stub.close()
    stub = Stub(lambda hit: (502, "<html>bad gateway</html>", {"content-type": "text/html"}))
    try:
        with pytest.raises(ApiError) as proxy:
            MemoryClient(stub.url).profiles()
        assert (proxy.value.status, proxy.value.code) == (502, "internal")
        assert "bad gateway" in proxy.value.message
    finally:
        stub.close()
    with pytest.raises(ConnectionError):
        MemoryClient("http://127.0.0.1:9", max_retries=0).profiles()


def test_wait_for_job_stops_at_every_final_status() -> None:
    statuses = ["queued", "extracting", "done_with_errors"]
    job = {
        "id": "j1",
        "session_id": "s",
        "failed_stage": None,
        "error": None,
        "new_messages": 0,
        "known_messages": 0,
        "memory_ids": [],
        "vectorized": 0,
        "degraded": [],
        "usage": {"stages": {}},
    }
    stub = Stub(lambda hit: (200, json.dumps({**job, "status": statuses[min(hit, 3) - 1]}), {}))
    try:
        done = MemoryClient(stub.url).profile("p").wait_for_job("j1", interval=0.01)
        assert done.status == "done_with_errors" and done.finished and stub.hits == 3
    finally:
        stub.close()


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after_seconds("2") == 2.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None
    later = retry_after_seconds(formatdate(time.time() + 5, usegmt=True))
    assert later is not None and 3 < later <= 5


def test_retry_after_is_waited_for_and_capped() -> None:
    limited = '{"error": {"code": "rate_limited", "message": "slow down"}}'
    stub = Stub(
        lambda hit: (
            (429, limited, {"retry-after": "1"}) if hit == 1 else (200, '{"profiles": []}', {})
        )
    )
    try:
        started = time.monotonic()
        assert MemoryClient(stub.url).profiles() == []
        assert time.monotonic() - started >= 0.9, "the client waited for Retry-After"
        assert stub.hits == 2
    finally:
        stub.close()
    stub = Stub(lambda hit: (429, limited, {"retry-after": "120"}))
    try:
        started = time.monotonic()
        with pytest.raises(RateLimitedError) as refused:
            MemoryClient(stub.url, max_retry_delay=5).profiles()
        assert refused.value.retry_after == 120
        assert stub.hits == 1, (
            "a wait over max_retry_delay is not shortened: the error comes at once"
        )
        assert time.monotonic() - started < 5
    finally:
        stub.close()


async def test_the_async_transport_makes_the_same_decisions() -> None:
    timeout = '{"error": {"code": "timeout", "message": "the request took too long"}}'
    stub = Stub(lambda hit: (503, timeout, {"retry-after": "0"}))
    try:
        async with AsyncMemoryClient(stub.url, max_retries=2) as client:
            with pytest.raises(UnavailableError):
                await client.sessions.create()
            assert stub.hits == 1
            with pytest.raises(UnavailableError):
                await client.profiles()
            assert stub.hits == 4
            with pytest.raises(UnavailableError):
                async for _ in client.profile("p").export_lines():
                    pass
            assert stub.hits == 7, "an export is retried before its first byte"
    finally:
        stub.close()
