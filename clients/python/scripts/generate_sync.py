"""Generates the synchronous client and transport (``_sync_client.py``, ``_sync_transport.py``)
from the asynchronous ones, the way ``unasync`` does: the same methods, names and docs,
without ``async``/``await``.

    python scripts/generate_sync.py          # writes the two files
    python scripts/generate_sync.py --check  # fails when a committed file is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "agent_memory"

# (source, target, the target's docstring)
FILES = [
    (
        "_async_client.py",
        "_sync_client.py",
        "The synchronous client: the asynchronous client's methods, names and docs, without\n"
        "``async``. Generated from ``_async_client.py`` by ``scripts/generate_sync.py``: edit\n"
        "that file and run the script.\n\n"
        ">>> with MemoryClient() as memory:\n"
        '...     session = memory.sessions.create(profile="alice")\n'
        '...     hits = memory.profile("alice").recall("what does alice like?")\n',
    ),
    (
        "_async_transport.py",
        "_sync_transport.py",
        "The synchronous HTTP transport (httpx): API keys, timeouts, and the shared retry\n"
        "policy. Generated from ``_async_transport.py`` by ``scripts/generate_sync.py``: edit\n"
        "that file and run the script.\n",
    ),
]

# Whole-word replacements, in order.
WORDS = [
    ("AsyncMemoryClient", "MemoryClient"),
    ("AsyncSessionManager", "SessionManager"),
    ("AsyncSession", "Session"),
    ("AsyncProfile", "Profile"),
    ("AsyncTransport", "Transport"),
    ("_async_transport", "_sync_transport"),
    ("AsyncIterator", "Iterator"),
    ("AsyncIterable", "Iterable"),
    ("AsyncClient", "Client"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("aclosing", "closing"),
    ("aread", "read"),
    ("aiter_lines", "iter_lines"),
]


def convert(text: str, doc: str) -> str:
    """The synchronous twin of an asynchronous module's source, under ``doc``."""
    _header, _, body = text.partition('"""\n\nfrom __future__')
    body = "from __future__" + body
    body = re.sub(r"\basync def\b", "def", body)
    body = re.sub(r"\basync for\b", "for", body)
    body = re.sub(r"\basync with\b", "with", body)
    body = re.sub(r"\bawait ", "", body)
    body = body.replace("asyncio.sleep(", "time.sleep(").replace(
        "import asyncio\n", "import time\n"
    )
    body = body.replace("AsyncGenerator[str, None]", "Generator[str, None, None]")
    body = re.sub(r"\bAsyncGenerator\b", "Generator", body)
    for old, new in WORDS:
        body = re.sub(rf"\b{old}\b", new, body)
    # `Iterable[str] | Iterable[str]` after the renames: say it once.
    body = body.replace("Iterable[str] | Iterable[str]", "Iterable[str]")
    body = body.replace(
        "from collections.abc import Iterable, Iterator, Iterable,",
        "from collections.abc import Iterable, Iterator,",
    )
    return f'"""{doc}"""\n\n{body}'


def main() -> int:
    stale = False
    for source, target, doc in FILES:
        generated = convert((PACKAGE / source).read_text(), doc)
        path = PACKAGE / target
        if "--check" in sys.argv:
            if not path.exists() or path.read_text() != generated:
                print(f"{path} is stale: run python scripts/generate_sync.py", file=sys.stderr)
                stale = True
        else:
            path.write_text(generated)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
