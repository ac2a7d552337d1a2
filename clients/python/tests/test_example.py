"""``examples/python-agent`` runs against a real server with its scripted model: the first
session remembers and ships, the second recalls."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agent_memory import MemoryClient

from .conftest import Served

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python-agent" / "agent.py"


def test_the_example_agent_remembers_and_recalls(server: Served) -> None:
    env = {
        **os.environ,
        "MEMORY_URL": server.base_url,
        "MEMORY_PROFILE": "py-example",
        "OPENAI_BASE_URL": "",
    }
    run = subprocess.run(
        [sys.executable, str(EXAMPLE)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    turns = ("\n" + run.stdout).split("\nassistant: ")[1:]
    assert len(turns) == 2, run.stdout
    assert "Remembered" in turns[0]
    assert "The user is vegetarian and lives in Lyon" in turns[1], "the answer quotes the recall"
    with MemoryClient(server.base_url) as memory:
        stored = [m.content for m in memory.profile("py-example").list()]
        assert stored == ["The user is vegetarian and lives in Lyon"]
        sessions = [s for s in memory.sessions.list() if s.profile == "py-example"]
        assert len(sessions) == 2
