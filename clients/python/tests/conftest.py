"""What the tests run against: a real ``memory serve`` (cargo's build, or ``MEMORY_BIN``)
over a fresh data dir, and a fake OpenAI-compatible endpoint standing in for the model."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_memory import AsyncMemoryClient, MemoryClient


def memory_binary() -> str:
    explicit = os.environ.get("MEMORY_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "memory-target"))
    binary = Path(target) / "debug" / "memory"
    if not binary.exists():
        raise RuntimeError(
            f"no memory binary at {binary}: run cargo build --workspace --bins or set MEMORY_BIN"
        )
    return str(binary)


@dataclass
class Served:
    base_url: str
    dir: Path
    process: subprocess.Popen[str]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def serve(config: str = "", keys: str | None = None) -> Served:
    """Starts ``memory serve`` on a free loopback port over a fresh data dir."""
    directory = Path(tempfile.mkdtemp(prefix="memory-py-"))
    (directory / "memory.toml").write_text(config)
    args = [memory_binary(), "--data-dir", str(directory), "serve", "--bind", "127.0.0.1:0"]
    if keys is not None:
        (directory / "keys.toml").write_text(keys)
        args += ["--keys", str(directory / "keys.toml")]
    process = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RUST_LOG": "warn"},
    )
    seen = ""
    assert process.stderr is not None
    for line in process.stderr:
        seen += line
        match = re.search(r"serving (http://127\.0\.0\.1:\d+)", line)
        if match:
            # Keep draining stderr so the server never blocks on a full pipe.
            threading.Thread(
                target=lambda: [None for _ in process.stderr or []], daemon=True
            ).start()
            return Served(match.group(1), directory, process)
    process.wait()
    raise RuntimeError(f"memory serve exited with {process.returncode}:\n{seen}")


def key_entry(tenant: str, key: str, extra: str = "") -> str:
    """A keys.toml entry for ``key``."""
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f'[[keys]]\ntenant = "{tenant}"\nsha256 = "{digest}"\nlabel = "{tenant}-test"\n{extra}\n'


def _smallest(schema: Any) -> Any:
    """The smallest instance of a strict-mode JSON schema."""
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0]
    if kind == "object":
        return {k: _smallest(v) for k, v in schema.get("properties", {}).items()}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(kind)


def _confirm_every_group(body: dict[str, Any]) -> str:
    """The fake model's verdict on consolidation's groups: every group shown is the same."""
    shown = re.findall(r"^Group \d+:", str(body["messages"][-1]["content"]), re.MULTILINE)
    groups = [{"group": i + 1, "same": True, "reason": "the same fact"} for i in range(len(shown))]
    return json.dumps({"groups": groups})


def _flag_every_pair(body: dict[str, Any]) -> str:
    """The fake model's verdict on contradiction candidates: every pair shown contradicts."""
    shown = re.findall(r"^Pair \d+:", str(body["messages"][-1]["content"]), re.MULTILINE)
    pairs = [
        {"pair": i + 1, "contradicts": True, "reason": "cannot both hold"}
        for i in range(len(shown))
    ]
    return json.dumps({"pairs": pairs})


@dataclass
class FakeModel:
    """A fake OpenAI-compatible chat endpoint: a structured request gets its schema's
    smallest instance (consolidation's gets every group confirmed, contradiction's every
    pair flagged, the digest's a fixed summary drawing on the first record), any other (a
    compaction) gets ``summary``."""

    summary: str = "## Goal\nPlan a trip to Lyon by train."
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    _server: ThreadingHTTPServer | None = None

    def start(self) -> FakeModel:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                model.requests.append(body)
                format_ = (body.get("response_format") or {}).get("json_schema") or {}
                schema = format_.get("schema")
                if format_.get("name") == "consolidation":
                    content = _confirm_every_group(body)
                elif format_.get("name") == "contradiction":
                    content = _flag_every_pair(body)
                elif format_.get("name") == "digest":
                    digest = {"summary": "The user's profile in brief.", "sources": [1]}
                    content = json.dumps(digest)
                elif schema is not None:
                    content = json.dumps(_smallest(schema))
                else:
                    content = model.summary
                answer = json.dumps(
                    {
                        "id": f"chatcmpl-{len(model.requests)}",
                        "object": "chat.completion",
                        "model": body.get("model", "fake"),
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 300,
                            "completion_tokens": 12,
                            "total_tokens": 312,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def design_config(model: FakeModel) -> str:
    """The deployment most tests use: the design's blocks, the profile block, the memory
    tools, the fake model for compaction, and no embedder."""
    return f"""
[[blocks]]
label = "soul"
kind = "readonly"
description = "Identity"
text = "You are a helpful assistant."

[[blocks]]
label = "memory"
kind = "writable"
description = "Important facts learned during conversation"
max_tokens = 1100

[[blocks]]
label = "knowledge"
kind = "searchable"
description = "Searchable knowledge base"

[[blocks]]
label = "profile"
kind = "profile"
max_tokens = 400

[sessions]
memory_tools = ["recall", "remember", "forget"]

[llm]
base_url = "{model.base_url}"
model = "fake"
structured_output = "json_schema"
max_retries = 0

[compaction]
protect_head = 1
tail_token_budget = 10

[memory]
embedder = "none"
"""


@pytest.fixture(scope="session")
def model() -> Iterator[FakeModel]:
    fake = FakeModel().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="session")
def server(model: FakeModel) -> Iterator[Served]:
    served = serve(design_config(model))
    yield served
    served.stop()


@pytest.fixture
def client(server: Served) -> Iterator[MemoryClient]:
    with MemoryClient(server.base_url) as memory:
        yield memory


@pytest.fixture
async def aclient(server: Served) -> AsyncIterator[AsyncMemoryClient]:
    async with AsyncMemoryClient(server.base_url) as memory:
        yield memory


def text(id: str, role: str, body: str) -> dict[str, Any]:
    """A UIMessage with one text part."""
    return {"id": id, "role": role, "parts": [{"type": "text", "text": body}]}
