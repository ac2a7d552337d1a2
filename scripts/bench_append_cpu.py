#!/usr/bin/env python3
"""A server's CPU and SQL statements per HTTP append, for `memory` binaries side by side:
`python3 scripts/bench_append_cpu.py BINARY [BINARY ...]` (issue 34's twelfth step).

For each binary: `memory serve` on a fresh data directory and a free loopback port; 200
sessions, each named by one user message; then 8 threads (keep-alive connections) append
6,000 single user messages round-robin. The timed pass reads the server's user + system CPU
from /proc/PID/stat before and after the 6,000; a second pass, with
`MEMORY_LOG=sqlx::query=debug`, counts every statement the server ran (6,200 appends in all).
The clients run in this process, not the server's, so their CPU is not counted.
"""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

SESSIONS, APPENDS, THREADS = 200, 6_000, 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(conn: http.client.HTTPConnection, method: str, path: str, body=None):
    conn.request(
        method,
        path,
        body=None if body is None else json.dumps(body),
        headers={"content-type": "application/json"},
    )
    response = conn.getresponse()
    data = response.read()
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status} {data!r}")
    return json.loads(data) if data else None


def message(id_: str, text: str) -> dict:
    return {"message": {"id": id_, "role": "user", "parts": [{"type": "text", "text": text}]}}


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(binary: str, log_filter: str, log_path: str) -> tuple[float, float]:
    """Serves, loads, stops; returns (server CPU seconds, wall seconds) of the timed appends."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="append-cpu-")
    env = dict(os.environ, MEMORY_LOG=log_filter)
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [binary, "serve", "--data-dir", data_dir, "--bind", f"127.0.0.1:{port}"],
            stdout=log,
            stderr=log,
            env=env,
        )
        try:
            for _ in range(150):
                try:
                    call(http.client.HTTPConnection("127.0.0.1", port), "GET", "/healthz")
                    break
                except OSError:
                    time.sleep(0.2)
            conn = http.client.HTTPConnection("127.0.0.1", port)
            ids = [call(conn, "POST", "/v1/sessions", {})["id"] for _ in range(SESSIONS)]
            for i, session in enumerate(ids):
                call(conn, "POST", f"/v1/sessions/{session}/messages", message(f"w{i}", "hello"))

            def appends(first: int) -> None:
                conn = http.client.HTTPConnection("127.0.0.1", port)
                for i in range(first, APPENDS, THREADS):
                    path = f"/v1/sessions/{ids[i % SESSIONS]}/messages"
                    call(conn, "POST", path, message(f"m{i}", f"message {i} about Lisbon"))

            cpu, wall = cpu_seconds(server.pid), time.monotonic()
            threads = [threading.Thread(target=appends, args=(t,)) for t in range(THREADS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return cpu_seconds(server.pid) - cpu, time.monotonic() - wall
        finally:
            server.terminate()
            server.wait()
            subprocess.run(["rm", "-rf", data_dir], check=False)


def main() -> None:
    binaries = sys.argv[1:]
    if not binaries:
        sys.exit(__doc__)
    print("| binary | server CPU per append | appends/s (8 Python clients) | statements per append |")
    print("|---|---:|---:|---:|")
    for binary in binaries:
        log_path = tempfile.mktemp(prefix="append-cpu-", suffix=".log")
        cpu, wall = run(binary, "warn", log_path)
        run(binary, "sqlx::query=debug", log_path)
        lines = open(log_path).read().splitlines()
        statements = [line for line in lines if "sqlx::query" in line]
        kinds = Counter(m.group(1) for m in map(re.compile(r'summary="([^"]*)"').search, statements) if m)
        os.remove(log_path)
        print(
            f"| {binary} | {cpu / APPENDS * 1e6:.0f} µs | {APPENDS / wall:.0f} "
            f"| {len(statements) / (SESSIONS + APPENDS):.2f} |"
        )
        for kind, count in kinds.most_common(4):
            print(f"|   {kind} | | | {count} in all |", file=sys.stderr)


if __name__ == "__main__":
    main()
