"""Generates the synchronous client (``_sync_client.py``) from the asynchronous one, the way
``unasync`` does: the same methods, names and docs, without ``async``/``await``.

    python scripts/generate_sync.py          # writes src/agent_memory/_sync_client.py
    python scripts/generate_sync.py --check  # fails when the committed file is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "agent_memory" / "_async_client.py"
TARGET = SOURCE.with_name("_sync_client.py")

# Whole-word replacements, in order.
WORDS = [
    ("AsyncMemoryClient", "MemoryClient"),
    ("AsyncSessionManager", "SessionManager"),
    ("AsyncSession", "Session"),
    ("AsyncProfile", "Profile"),
    ("AsyncTransport", "Transport"),
    ("AsyncIterator", "Iterator"),
    ("AsyncIterable", "Iterable"),
    ("AsyncClient", "Client"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("aclosing", "closing"),
]


def convert(text: str) -> str:
    """The synchronous twin of the asynchronous client's source."""
    _header, _, body = text.partition('"""\n\nfrom __future__')
    body = "from __future__" + body
    body = re.sub(r"\basync def\b", "def", body)
    body = re.sub(r"\basync for\b", "for", body)
    body = re.sub(r"\basync with\b", "with", body)
    body = re.sub(r"\bawait ", "", body)
    body = body.replace("asyncio.sleep(", "time.sleep(").replace(
        "import asyncio\n", "import time\n"
    )
    for old, new in WORDS:
        body = re.sub(rf"\b{old}\b", new, body)
    # `Iterable[str] | Iterable[str]` after the renames: say it once.
    body = body.replace("Iterable[str] | Iterable[str]", "Iterable[str]")
    body = body.replace(
        "from collections.abc import Iterable, Iterator, Iterable,",
        "from collections.abc import Iterable, Iterator,",
    )
    doc = (
        '"""The synchronous client: the asynchronous client\'s methods, names and docs, without\n'
        "``async``. Generated from ``_async_client.py`` by ``scripts/generate_sync.py``: edit\n"
        "that file and run the script.\n\n"
        ">>> with MemoryClient() as memory:\n"
        '...     session = memory.sessions.create(profile="alice")\n'
        '...     hits = memory.profile("alice").recall("what does alice like?")\n'
        '"""\n\n'
    )
    return doc + body


def main() -> int:
    generated = convert(SOURCE.read_text())
    if "--check" in sys.argv:
        if TARGET.read_text() != generated:
            print(f"{TARGET} is stale: run python scripts/generate_sync.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(generated)
    return 0


if __name__ == "__main__":
    sys.exit(main())
