"""The inspector's requests at scale: a session of N messages (one chain, with a branch near
its end) and a profile of N memories, imported into a fresh ``memory serve``, then the
requests each view makes, timed (median of 5 after a warm-up), beside the same server's
health check as the baseline of one round trip.

    MEMORY_BIN=target/debug/memory python clients/python/scripts/bench_inspector.py [N]

N defaults to 100,000. The results go to docs/benchmarks.md by hand.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_memory import MemoryClient
from tests.conftest import serve


def timed(label: str, call: Callable[[], object], baseline: float | None = None) -> float:
    call()
    samples = []
    for _ in range(5):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    median = statistics.median(samples) * 1000
    ratio = f"  ({median / baseline:.1f}x the health check)" if baseline else ""
    print(f"{label:<58} {median:8.1f} ms{ratio}")
    return median


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    served = serve('[memory]\nembedder = "none"\n')
    try:
        with MemoryClient(served.base_url, timeout=600) as memory:
            started = time.perf_counter()
            lines = [
                json.dumps(
                    {
                        "kind": "session",
                        "session": {
                            "id": "big",
                            "name": "big",
                            "parent_session_id": None,
                            "model": None,
                            "source": None,
                            "usage": {"input_tokens": 0, "output_tokens": 0, "cost": 0.0},
                            "end_reason": None,
                            "profile": None,
                            "created_at": 0,
                            "updated_at": 0,
                        },
                    }
                )
            ]
            parent = None
            for i in range(n):
                message = {
                    "id": f"m{i}",
                    "role": "user" if i % 2 == 0 else "assistant",
                    "parts": [{"type": "text", "text": f"message {i} about the trip"}],
                }
                lines.append(
                    json.dumps(
                        {
                            "kind": "message",
                            "session_id": "big",
                            "parent_id": parent,
                            "message": message,
                        }
                    )
                )
                parent = f"m{i}"
            lines.append(
                json.dumps(
                    {
                        "kind": "message",
                        "session_id": "big",
                        "parent_id": f"m{n - 10}",
                        "message": {
                            "id": "branch",
                            "role": "assistant",
                            "parts": [{"type": "text", "text": "a branch"}],
                        },
                    }
                )
            )
            memory.sessions.import_(lines)
            memories = [
                json.dumps({"kind": "header", "format": "agent-memory-profile", "version": 2})
            ]
            for i in range(n):
                memories.append(
                    json.dumps(
                        {
                            "kind": "memory",
                            "memory": {
                                "id": f"mem-{i:06d}",
                                "kind": "fact",
                                "content": f"fact number {i} about the user",
                                "key": f"topic.{i}",
                                "questions": [],
                                "session_id": "big",
                                "source_message_ids": [],
                                "recorded_at": 1_700_000_000_000 + i,
                                "valid_at": None,
                                "superseded_by": None,
                                "forgotten": None,
                            },
                        }
                    )
                )
            memory.profile("big").import_(memories)
            print(f"seeded {n} messages and {n} memories in {time.perf_counter() - started:.0f} s")

            http = memory.http
            base = timed("GET /healthz (one round trip)", lambda: http.json("GET", "/healthz"))
            timed(
                "sessions list, first page",
                lambda: http.json("GET", "/v1/sessions", query={"limit": 50}),
                base,
            )
            timed("latest leaf", lambda: http.json("GET", "/v1/sessions/big/latest-leaf"), base)
            timed(
                f"history of a {n}-message path, last 200",
                lambda: http.json(
                    "GET", "/v1/sessions/big/history", query={"leaf": f"m{n - 1}", "limit": 200}
                ),
                base,
            )
            timed(
                f"history of a {n}-message path, last 200, with branch points (the view)",
                lambda: http.json(
                    "GET",
                    "/v1/sessions/big/history",
                    query={"leaf": f"m{n - 1}", "limit": 200, "branches": True},
                ),
                base,
            )
            timed(
                "children of one message",
                lambda: http.json("GET", f"/v1/sessions/big/messages/m{n - 10}/children"),
                base,
            )
            timed(
                f"latest leaf under the root: a {n}-message subtree (a branch switch)",
                lambda: http.json("GET", "/v1/sessions/big/latest-leaf", query={"under": "m0"}),
                base,
            )
            timed("compactions", lambda: http.json("GET", "/v1/sessions/big/compactions"), base)
            timed(
                "memories, first page of 50",
                lambda: http.json("GET", "/v1/profiles/big/memories", query={"limit": 50}),
                base,
            )
            page = http.json("GET", "/v1/profiles/big/memories", query={"limit": 50})
            cursor = page["next_cursor"]
            timed(
                "memories, a later page",
                lambda: http.json(
                    "GET", "/v1/profiles/big/memories", query={"limit": 50, "cursor": cursor}
                ),
                base,
            )
            timed(
                "one key's version chain",
                lambda: http.json(
                    "GET",
                    "/v1/profiles/big/memories",
                    query={"key": f"topic.{n // 2}", "all": "true"},
                ),
                base,
            )
            timed(
                "memories recorded since a time",
                lambda: http.json(
                    "GET",
                    "/v1/profiles/big/memories",
                    query={"since": 1_700_000_000_000 + n - 100, "limit": 50},
                ),
                base,
            )
            timed(
                "recall with explain",
                lambda: http.json(
                    "POST",
                    "/v1/profiles/big/recall",
                    body={"query": "fact number 4242", "explain": True},
                ),
                base,
            )
    finally:
        served.stop()


if __name__ == "__main__":
    main()
