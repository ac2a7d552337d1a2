"""The synchronous client: the asynchronous client's methods, names and docs, without
``async``. Generated from ``_async_client.py`` by ``scripts/generate_sync.py``: edit
that file and run the script.

>>> with MemoryClient() as memory:
...     session = memory.sessions.create(profile="alice")
...     hits = memory.profile("alice").recall("what does alice like?")
"""

from __future__ import annotations

import time
import builtins
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

import httpx

from ._sync_transport import Transport
from ._transport import DEFAULT_BASE_URL
from .errors import TimeoutError
from .models import (
    About,
    AppendOutcome,
    BlockChoice,
    Category,
    Compaction,
    CompactResult,
    ConsolidationReport,
    ContextBlock,
    Contradiction,
    DigestReport,
    Ended,
    IngestAccepted,
    IngestJob,
    IngestLine,
    Memory,
    MemoryPage,
    Message,
    ProfileDigest,
    ProfileImport,
    ProfilePage,
    Purged,
    RecallResult,
    SearchHit,
    SessionImport,
    SessionInfo,
    SettingsView,
    ToolDefinition,
    ToolResult,
)

Body = str | bytes | Iterable[str]
"""What an import takes: NDJSON text or bytes, or its lines."""

SearchMode = Literal["all_words", "any_words", "phrase"]
MemoryKind = Literal["fact", "event", "instruction", "task"]

IMPORT_TIMEOUT = 300.0
"""An import's default timeout: the server gives imports ten times its request limit."""


def _seg(value: str) -> str:
    return quote(value, safe="")


def _line(line: str) -> str:
    return line if line.endswith("\n") else line + "\n"


def _ndjson(body: Body) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    parts: list[str] = []
    if isinstance(body, Iterable):
        for line in body:
            parts.append(_line(line))
    else:
        for line in body:
            parts.append(_line(line))
    return "".join(parts).encode()


def _parent(parent_id: str | None, root: bool) -> dict[str, str]:
    if root:
        return {"kind": "root"}
    if parent_id is not None:
        return {"kind": "message", "id": parent_id}
    return {"kind": "latest_leaf"}


def _drop_none(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _instant(value: datetime | str | int | None, name: str) -> str | int | None:
    """A time as the server reads it: a datetime as ISO 8601 (RFC 3339), the rest as given."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError(
                f"{name} is a naive datetime: pass an aware one, "
                "e.g. datetime.now(timezone.utc) + timedelta(days=1)"
            )
        return value.isoformat()
    return value


class Session:
    """A session on the server. Cheap to make: it holds the id and the transport."""

    def __init__(self, http: Transport, id: str) -> None:
        self._http = http
        self.id = id
        """The session id."""

    def _path(self, suffix: str = "") -> str:
        return f"/v1/sessions/{_seg(self.id)}{suffix}"

    def info(self) -> SessionInfo:
        """The session's record: name, model, usage, profile, end reason, times."""
        return SessionInfo.model_validate(self._http.json("GET", self._path()))

    def append_message(
        self, message: Message, *, parent_id: str | None = None, root: bool = False
    ) -> AppendOutcome:
        """Appends a message (insert-if-absent) to ``parent_id``, the latest leaf, or a new root."""
        answer = self._http.json(
            "POST",
            self._path("/messages"),
            body={"message": message, "parent": _parent(parent_id, root)},
        )
        return AppendOutcome.model_validate(answer["outcomes"][0])

    def append_messages(
        self, messages: Sequence[Message], *, parent_id: str | None = None, root: bool = False
    ) -> list[AppendOutcome]:
        """Appends a chain (each message the parent of the next) in one request, atomically."""
        answer = self._http.json(
            "POST",
            self._path("/messages"),
            body={"messages": list(messages), "parent": _parent(parent_id, root)},
        )
        return [AppendOutcome.model_validate(o) for o in answer["outcomes"]]

    def get_history(self, leaf_id: str | None = None, *, raw: bool = False) -> list[Message]:
        """The root-to-leaf history of ``leaf_id`` (the latest leaf), compactions applied;
        with ``raw``, the stored messages the compaction summaries stand in for."""
        query = {"leaf": leaf_id, "raw": True if raw else None}
        answer = self._http.json("GET", self._path("/history"), query=query)
        return list(answer["messages"])

    def get_latest_leaf(self, *, under: str | None = None) -> Message | None:
        """The most recent message with no children (in the subtree ``under`` a message,
        when given), or ``None`` for an empty session."""
        answer = self._http.json("GET", self._path("/latest-leaf"), query={"under": under})
        message: Message | None = answer["message"]
        return message

    def get_branches(self, message_id: str) -> list[Message]:
        """The children of a message (its branches), in insertion order."""
        answer = self._http.json("GET", self._path(f"/messages/{_seg(message_id)}/children"))
        return list(answer["messages"])

    def update_message(self, message: Message) -> None:
        """Replaces a stored message's content (same id; its parent and role stay)."""
        self._http.json("PUT", self._path(f"/messages/{_seg(message['id'])}"), body=message)

    def delete_message(self, message_id: str) -> None:
        """Deletes one message (its children re-link to its parent); ``NotFoundError`` if absent."""
        self._http.json("DELETE", self._path(f"/messages/{_seg(message_id)}"))

    def delete_messages(self, message_ids: Sequence[str]) -> int:
        """Deletes messages (children re-link to their parents); how many were deleted."""
        answer = self._http.json(
            "DELETE", self._path("/messages"), body={"ids": list(message_ids)}
        )
        return int(answer["deleted"])

    def search(
        self, query: str, *, limit: int | None = None, mode: SearchMode | None = None
    ) -> list[SearchHit]:
        """Full-text search over this session's messages, best first."""
        answer = self._http.json(
            "GET",
            "/v1/search",
            query={"q": query, "session": self.id, "limit": limit, "mode": mode},
        )
        return [SearchHit.model_validate(h) for h in answer["hits"]]

    def compact(self, *, leaf_id: str | None = None) -> CompactResult:
        """Compacts a branch into a summary overlay through the server's model (originals stay)."""
        answer = self._http.json(
            "POST", self._path("/compact"), body=_drop_none({"leaf": leaf_id})
        )
        return CompactResult.model_validate(answer)

    def get_compactions(self) -> list[Compaction]:
        """The compaction overlays, oldest first."""
        answer = self._http.json("GET", self._path("/compactions"))
        return [Compaction.model_validate(c) for c in answer["compactions"]]

    def get_context_blocks(self) -> list[ContextBlock]:
        """Every context block, in prompt order."""
        answer = self._http.json("GET", self._path("/context"))
        return [ContextBlock.model_validate(b) for b in answer["blocks"]]

    def get_context_block(self, label: str) -> ContextBlock:
        """One context block."""
        return ContextBlock.model_validate(
            self._http.json("GET", self._path(f"/context/{_seg(label)}"))
        )

    def replace_context_block(self, label: str, content: str) -> ContextBlock:
        """Replaces a writable block's content (``RefusedError`` over its budget)."""
        answer = self._http.json(
            "PUT", self._path(f"/context/{_seg(label)}"), body={"content": content}
        )
        return ContextBlock.model_validate(answer)

    def append_context_block(self, label: str, content: str) -> ContextBlock:
        """Appends to a writable block on a new line (``RefusedError`` over its budget)."""
        answer = self._http.json(
            "POST", self._path(f"/context/{_seg(label)}/append"), body={"content": content}
        )
        return ContextBlock.model_validate(answer)

    def freeze_system_prompt(self) -> str:
        """The system prompt, frozen at its first render (writes show after a refresh)."""
        answer = self._http.json("GET", self._path("/prompt"))
        return str(answer["prompt"])

    def refresh_system_prompt(self) -> str:
        """Renders the prompt again from the blocks as they are now, and freezes that."""
        answer = self._http.json("GET", self._path("/prompt"), query={"refresh": True})
        return str(answer["prompt"])

    def tool_definitions(self) -> list[ToolDefinition]:
        """The session's tools (context tools, search, and ``recall``/``remember`` when bound)."""
        answer = self._http.json("GET", self._path("/tools"), query={"format": "mcp"})
        return [ToolDefinition.model_validate(t) for t in answer]

    def tools(
        self, format: Literal["openai", "anthropic", "mcp"] = "openai"
    ) -> list[dict[str, Any]]:
        """The session's tool definitions in a provider's shape, for any framework."""
        answer = self._http.json("GET", self._path("/tools"), query={"format": format})
        return list(answer)

    def execute_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> ToolResult:
        """Runs one of the session's tools on the server (a refusal is a result: ``is_error``)."""
        answer = self._http.json(
            "POST", self._path(f"/tools/{_seg(name)}"), body=dict(arguments or {})
        )
        return ToolResult.model_validate(answer)

    def rename(self, name: str) -> SessionInfo:
        """Renames the session."""
        return SessionInfo.model_validate(
            self._http.json("PATCH", self._path(), body={"name": name})
        )

    def bind(self, profile: str | None) -> SessionInfo:
        """Binds the session to a long-term profile, or unbinds it with ``None``."""
        answer = self._http.json("PATCH", self._path(), body={"profile": profile})
        return SessionInfo.model_validate(answer)

    def end(self, *, reason: str | None = None) -> Ended:
        """Ends the session; a bound session ships what was not shipped yet to its profile."""
        answer = self._http.json(
            "POST", self._path("/end"), body=_drop_none({"reason": reason})
        )
        return Ended.model_validate(answer)

    def delete(self) -> None:
        """Deletes the session with its messages, overlays and index entries."""
        self._http.json("DELETE", self._path())

    def export_lines(self) -> Iterator[str]:
        """The session's export, one JSON line at a time, streamed."""
        with closing(self._http.stream_lines("GET", self._path("/export"))) as lines:
            for line in lines:
                yield line


class SessionManager:
    """The sessions of one server (one tenant, with API keys)."""

    def __init__(self, http: Transport) -> None:
        self._http = http

    def create(
        self,
        *,
        id: str | None = None,
        name: str | None = None,
        model: str | None = None,
        source: str | None = None,
        parent_session_id: str | None = None,
        profile: str | None = None,
    ) -> Session:
        """Creates a session (``ConflictError`` when the id is taken)."""
        fields = {
            "id": id,
            "name": name,
            "model": model,
            "source": source,
            "parent_session_id": parent_session_id,
            "profile": profile,
        }
        answer = self._http.json("POST", "/v1/sessions", body=_drop_none(fields))
        return Session(self._http, answer["id"])

    def get(self, id: str) -> Session:
        """The session ``id``, checked to exist (``NotFoundError`` otherwise)."""
        answer = self._http.json("GET", f"/v1/sessions/{_seg(id)}")
        return Session(self._http, answer["id"])

    def session(self, id: str) -> Session:
        """A handle on session ``id`` without a request."""
        return Session(self._http, id)

    def list_page(
        self, *, limit: int | None = None, offset: int | None = None
    ) -> builtins.list[SessionInfo]:
        """One page of sessions, most recently updated first."""
        answer = self._http.json(
            "GET", "/v1/sessions", query={"limit": limit, "offset": offset}
        )
        return [SessionInfo.model_validate(s) for s in answer["sessions"]]

    def list(self, *, page_size: int = 100) -> Iterator[SessionInfo]:
        """Every session, page by page (a session updated meanwhile may move between pages)."""
        offset = 0
        while True:
            page = self.list_page(limit=page_size, offset=offset)
            for info in page:
                yield info
            if len(page) < page_size:
                return
            offset += len(page)

    def fork(self, id: str, at: str, *, name: str | None = None) -> Session:
        """Forks session ``id`` at message ``at`` into a new linked session."""
        answer = self._http.json(
            "POST", f"/v1/sessions/{_seg(id)}/fork", body=_drop_none({"at": at, "name": name})
        )
        return Session(self._http, answer["id"])

    def delete(self, id: str) -> None:
        """Deletes session ``id`` with its messages, overlays and index entries."""
        self._http.json("DELETE", f"/v1/sessions/{_seg(id)}")

    def search(
        self, query: str, *, limit: int | None = None, mode: SearchMode | None = None
    ) -> builtins.list[SearchHit]:
        """Full-text search across every session, best first."""
        answer = self._http.json(
            "GET", "/v1/search", query={"q": query, "limit": limit, "mode": mode}
        )
        return [SearchHit.model_validate(h) for h in answer["hits"]]

    def import_(self, body: Body, *, timeout: float = IMPORT_TIMEOUT) -> SessionImport:
        """Imports session export lines (validated first: a bad line writes nothing)."""
        answer = self._http.json(
            "POST",
            "/v1/sessions/import",
            content=_ndjson(body),
            content_type="application/x-ndjson",
            timeout=timeout,
        )
        return SessionImport.model_validate(answer)


class Profile:
    """A long-term memory profile (it exists once something is stored in it)."""

    def __init__(self, http: Transport, name: str) -> None:
        self._http = http
        self.name = name
        """The profile's name."""

    def _path(self, suffix: str = "") -> str:
        return f"/v1/profiles/{_seg(self.name)}{suffix}"

    def ingest(
        self,
        session: str,
        messages: Sequence[IngestLine | Mapping[str, Any]] | None = None,
        *,
        leaf: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> IngestAccepted:
        """Queues an ingest job: ``messages`` given here, or (without them) the unshipped
        messages of the stored session ``session`` (``leaf``, ``from_`` and ``to`` pick a range).
        ``job`` is ``None`` when a stored session had nothing new."""
        body: dict[str, Any] = {"session": session}
        if messages is not None:
            body["messages"] = [
                m.model_dump(exclude_none=True) if isinstance(m, IngestLine) else dict(m)
                for m in messages
            ]
        body.update(_drop_none({"leaf": leaf, "from": from_, "to": to}))
        return IngestAccepted.model_validate(
            self._http.json("POST", self._path("/ingest"), body=body)
        )

    def remember(
        self,
        content: str,
        *,
        kind: MemoryKind | None = None,
        key: str | None = None,
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        expires_at: datetime | str | int | None = None,
    ) -> Memory:
        """Stores one memory now, superseding the current memory with the same key.

        ``metadata`` is your own: a flat mapping of strings, numbers, booleans and lists of
        strings (at most 32 keys, 8 KiB as JSON), kept and exported with the memory.

        ``expires_at`` is when it stops being current, in the future: an aware ``datetime``
        (a naive one raises ``ValueError``), an RFC 3339 string (``"2027-01-31T00:00:00Z"``)
        or milliseconds since the epoch. From then on recall and the default list leave it
        out (``list(all=True)`` still shows it). Default: its kind's lifetime in the server's
        ``[memory.lifetimes]``, if any.
        """
        body = _drop_none(
            {
                "content": content,
                "kind": kind,
                "key": key,
                "session_id": session_id,
                "metadata": dict(metadata) if metadata is not None else None,
                "expires_at": _instant(expires_at, "expires_at"),
            }
        )
        return Memory.model_validate(
            self._http.json("POST", self._path("/memories"), body=body)
        )

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        answer: bool | None = None,
        explain: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """Hybrid recall (full text, vectors, keys, dates; fused by reciprocal rank).

        ``metadata`` keeps only the memories whose metadata satisfies this filter (the grammar
        of :meth:`list_page`'s), applied inside every channel; raw messages, which carry no
        metadata, come only when the filter admits an empty mapping. The server refuses,
        naming it, a bad filter.
        """
        body = _drop_none(
            {
                "query": query,
                "limit": limit,
                "answer": answer,
                "explain": explain,
                "metadata": dict(metadata) if metadata is not None else None,
            }
        )
        return RecallResult.model_validate(
            self._http.json("POST", self._path("/recall"), body=body)
        )

    def list_page(
        self,
        *,
        kind: MemoryKind | None = None,
        key: str | None = None,
        session: str | None = None,
        all: bool | None = None,
        since: int | None = None,
        until: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> MemoryPage:
        """One page of memories, in the order they were recorded (``since`` and ``until`` in
        milliseconds since the epoch).

        ``metadata`` filters on your metadata: ``{"project": "atlas", "priority": {"$gte": 2}}``
        (operators ``$eq``, ``$in``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$exists``,
        combined with ``$and``, ``$or``, ``$not``); the server refuses, naming it, any other.
        """
        query = {
            "kind": kind,
            "key": key,
            "session": session,
            "all": all,
            "since": since,
            "until": until,
            "metadata": json.dumps(dict(metadata)) if metadata is not None else None,
            "limit": limit,
            "cursor": cursor,
        }
        return MemoryPage.model_validate(
            self._http.json("GET", self._path("/memories"), query=query)
        )

    def list(
        self,
        *,
        kind: MemoryKind | None = None,
        key: str | None = None,
        session: str | None = None,
        all: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
        page_size: int | None = None,
    ) -> Iterator[Memory]:
        """Every matching memory, page by page (current ones; ``all`` adds superseded,
        forgotten and expired ones; ``metadata`` filters as in :meth:`list_page`)."""
        cursor: str | None = None
        while True:
            page = self.list_page(
                kind=kind,
                key=key,
                session=session,
                all=all,
                metadata=metadata,
                limit=page_size,
                cursor=cursor,
            )
            for memory in page.memories:
                yield memory
            if page.next_cursor is None or not page.memories:
                return
            cursor = page.next_cursor

    def forget(self, memory_id: str, *, reason: str | None = None) -> None:
        """Forgets a memory (kept, marked, for audit; recall no longer returns it)."""
        self._http.json(
            "DELETE", self._path(f"/memories/{_seg(memory_id)}"), query={"reason": reason}
        )

    def purge(self, memory_id: str, *, with_sources: bool | None = None) -> Purged:
        """Erases a memory for good with its vectors, and with ``with_sources`` its raw messages."""
        answer = self._http.json(
            "POST",
            self._path(f"/memories/{_seg(memory_id)}/purge"),
            query={"with_sources": with_sources},
        )
        return Purged.model_validate(answer)

    def consolidate(self, *, dry_run: bool = False) -> ConsolidationReport:
        """Merges memories that say the same thing: each group into one survivor that keeps
        the union of their sources; the others are superseded by it with the reason (nothing
        is deleted). With ``dry_run``, only lists the planned merges."""
        answer = self._http.json(
            "POST", self._path("/consolidate"), body={"dry_run": dry_run}
        )
        return ConsolidationReport.model_validate(answer)

    def merged(self, memory_id: str) -> builtins.list[Memory]:
        """The memories consolidation merged into ``memory_id``, oldest first, with reasons."""
        answer = self._http.json("GET", self._path(f"/memories/{_seg(memory_id)}/merged"))
        return [Memory.model_validate(m) for m in answer["memories"]]

    def contradictions(self) -> builtins.list[Contradiction]:
        """Pairs of current memories that contradict each other, flagged by the LLM during
        consolidation runs, newest first; a pair leaves when either memory stops being
        current."""
        answer = self._http.json("GET", self._path("/contradictions"))
        return [Contradiction.model_validate(c) for c in answer["contradictions"]]

    def digest(self) -> ProfileDigest | None:
        """The profile's digest (``None`` when none is kept)."""
        answer = self._http.json("GET", self._path("/digest"))
        digest = answer["digest"]
        return None if digest is None else ProfileDigest.model_validate(digest)

    def refresh_digest(self, *, force: bool = False) -> DigestReport:
        """Writes the digest again when enough has changed (always with ``force``); needs an
        ``[llm]``."""
        answer = self._http.json("POST", self._path("/digest"), body={"force": force})
        return DigestReport.model_validate(answer)

    def block(self, *, tokens: int | None = None, top: int | None = None) -> BlockChoice:
        """What a bound session's profile block shows, and the scores it chose by."""
        answer = self._http.json(
            "GET", self._path("/block"), query={"tokens": tokens, "top": top}
        )
        return BlockChoice.model_validate(answer)

    def job(self, job_id: str) -> IngestJob:
        """One ingest job."""
        return IngestJob.model_validate(
            self._http.json("GET", self._path(f"/jobs/{_seg(job_id)}"))
        )

    def jobs(self) -> builtins.list[IngestJob]:
        """The profile's ingest jobs."""
        answer = self._http.json("GET", self._path("/jobs"))
        return [IngestJob.model_validate(j) for j in answer["jobs"]]

    def wait_for_job(
        self, job_id: str, *, timeout: float = 120.0, interval: float = 0.25
    ) -> IngestJob:
        """Polls a job until it is final (``TimeoutError`` after ``timeout`` seconds)."""
        waited = 0.0
        while True:
            job = self.job(job_id)
            if job.finished:
                return job
            if waited >= timeout:
                raise TimeoutError(f"job {job_id} is still {job.status} after {timeout} s")
            time.sleep(interval)
            waited += interval

    def settings(self) -> SettingsView:
        """The profile's own extraction settings and the effective ones (``NotFoundError``
        when the profile does not exist)."""
        return SettingsView.model_validate(self._http.json("GET", self._path("/settings")))

    def set_settings(
        self,
        *,
        instructions: str | None = None,
        categories: Sequence[Category | Mapping[str, Any]] | None = None,
        language: str | None = None,
    ) -> SettingsView:
        """Replaces the profile's own extraction settings (what is not given is removed:
        ``set_settings()`` removes them all), creating the profile if needed; ingest jobs use
        them from their next stage on.

        ``instructions`` say what to keep and what to ignore (at most 4,000 characters);
        ``categories`` are the labels the classifier chooses from (at most 32, names of 1 to
        40 of ``a-z 0-9 _ -``, distinct), stored in a memory's metadata under ``categories``;
        ``language`` is the one memories are written in (``"English"``, ``"fr"``). Invalid
        settings raise ``InvalidInputError`` and change nothing.
        """
        body = _drop_none(
            {
                "instructions": instructions,
                "categories": [
                    c.model_dump(exclude_none=True) if isinstance(c, Category) else dict(c)
                    for c in categories
                ]
                if categories is not None
                else None,
                "language": language,
            }
        )
        return SettingsView.model_validate(
            self._http.json("PUT", self._path("/settings"), body=body)
        )

    def delete(self) -> None:
        """Deletes the profile with everything in it."""
        self._http.json("DELETE", self._path())

    def export_lines(self, *, vectors: bool | None = None) -> Iterator[str]:
        """The profile's export, one JSON line at a time, streamed."""
        query = {"vectors": vectors}
        with closing(
            self._http.stream_lines("GET", self._path("/export"), query=query)
        ) as lines:
            for line in lines:
                yield line

    def import_(self, body: Body, *, timeout: float = IMPORT_TIMEOUT) -> ProfileImport:
        """Imports export lines (idempotent: what is there already is counted, not doubled)."""
        answer = self._http.json(
            "POST",
            self._path("/import"),
            content=_ndjson(body),
            content_type="application/x-ndjson",
            timeout=timeout,
        )
        return ProfileImport.model_validate(answer)


class MemoryClient:
    """The client of one ``memory serve`` (one tenant, with API keys)."""

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
        self.http = Transport(
            base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_delay=max_retry_delay,
            headers=headers,
            http=http,
        )
        """The transport every call goes through."""
        self.sessions = SessionManager(self.http)
        """Sessions: create, list, fork, delete, search, import."""

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection pool."""
        self.http.close()

    def profile(self, name: str) -> Profile:
        """The long-term profile ``name`` (no request is made)."""
        return Profile(self.http, name)

    def profiles(self) -> list[str]:
        """The names of the profiles that hold anything, in name order (every page read)."""
        return [name for name in self.profile_names()]

    def profiles_page(
        self, *, after: str | None = None, limit: int | None = None
    ) -> ProfilePage:
        """One page of profile names in name order: at most ``limit`` (the server's default
        1,000) after ``after``."""
        answer = self.http.json("GET", "/v1/profiles", query={"after": after, "limit": limit})
        return ProfilePage.model_validate(answer)

    def profile_names(
        self, *, after: str | None = None, limit: int | None = None
    ) -> Iterator[str]:
        """Every profile name in name order, read a page at a time."""
        while True:
            page = self.profiles_page(after=after, limit=limit)
            for name in page.profiles:
                yield name
            if page.next is None:
                return
            after = page.next

    def health(self) -> None:
        """Liveness: returns when the server answers."""
        self.http.json("GET", "/healthz")

    def ready(self) -> dict[str, Any]:
        """Readiness: what each backend reported (``UnavailableError`` when one is down)."""
        answer: dict[str, Any] = self.http.json("GET", "/readyz")
        return answer

    def about(self) -> About:
        """What the deployment is made of: each storage role's backend, the models, warnings."""
        return About.model_validate(self.http.json("GET", "/v1/about"))

    def openapi(self) -> dict[str, Any]:
        """The server's OpenAPI document."""
        answer: dict[str, Any] = self.http.json("GET", "/openapi.json")
        return answer
