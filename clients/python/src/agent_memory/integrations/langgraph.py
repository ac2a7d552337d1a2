"""A LangGraph ``BaseStore`` (sync and async) backed by ``memory serve`` profiles.

A namespace is a profile: its labels joined by ``.`` (each label escaped to the profile
name's alphabet, so any label works), after ``profile_prefix`` (``lg.`` by default, so the
store sees only the profiles it made). An item is a keyed memory
of that profile: ``put`` remembers (a new value supersedes the old one), ``get`` reads the
current memory of the key, ``delete`` forgets it, and ``search`` with a ``query`` runs the
profile's recall (full text, vectors, keys, fused by reciprocal rank), then applies
``filter`` to the values; without a query it lists. Values round-trip exactly: a memory's
content is the item as JSON, so its words are what recall searches.

>>> from langgraph.graph import StateGraph
>>> from agent_memory import AsyncMemoryClient, MemoryClient
>>> from agent_memory.integrations.langgraph import MemoryStore
>>> store = MemoryStore(MemoryClient(), AsyncMemoryClient())
>>> graph = builder.compile(store=store)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .._async_client import AsyncMemoryClient, AsyncProfile
from .._sync_client import MemoryClient, Profile
from ..errors import NotFoundError
from ..models import Memory

_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_MAX_PROFILE = 128


def encode_label(label: str) -> str:
    """A namespace label in the profile alphabet: letters, digits and ``-`` as they are,
    ``_`` as ``__``, every other byte of its UTF-8 as ``_`` and two hex digits."""
    if not label:
        raise InvalidNamespaceError("namespace labels must not be empty")
    out = []
    for ch in label:
        if ch in _PLAIN:
            out.append(ch)
        elif ch == "_":
            out.append("__")
        else:
            out.extend(f"_{b:02x}" for b in ch.encode())
    return "".join(out)


def decode_label(encoded: str) -> str:
    """The label ``encode_label`` escaped."""
    data = bytearray()
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch != "_":
            data.extend(ch.encode())
            i += 1
        elif encoded[i + 1 : i + 2] == "_":
            data.extend(b"_")
            i += 2
        else:
            data.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
    return data.decode()


def memory_key(key: str) -> str:
    """The item key as a memory key that the server's key normalisation leaves as it is."""
    return "k" + key.encode().hex()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _ms(value: int) -> str:
    return datetime.fromtimestamp(value / 1000, timezone.utc).isoformat()


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
        return all(_operator(value, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, dict):
        return isinstance(value, dict) and all(_matches(value.get(k), v) for k, v in wanted.items())
    return bool(value == wanted)


def _operator(value: Any, op: str, operand: Any) -> bool:
    try:
        if op == "$eq":
            return bool(value == operand)
        if op == "$ne":
            return bool(value != operand)
        if op == "$gt":
            return bool(value > operand)
        if op == "$gte":
            return bool(value >= operand)
        if op == "$lt":
            return bool(value < operand)
        if op == "$lte":
            return bool(value <= operand)
    except TypeError:
        return False
    raise ValueError(f"unsupported filter operator {op!r}: use $eq, $ne, $gt, $gte, $lt or $lte")


_MAX_RECALL = 1_000  # the server's largest recall


def _recall_limit(op: SearchOp) -> int:
    """How many hits to ask recall for: the page, or (with a filter, which runs on the
    values afterwards) as many as the server returns, so matches ranked low are not lost."""
    wanted = _MAX_RECALL if op.filter else max(op.limit + op.offset, 10)
    return min(wanted, _MAX_RECALL)


def _passes(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    return not filter or all(_matches(value.get(k), v) for k, v in filter.items())


def _condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    window = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, window, strict=True))


class MemoryStore(BaseStore):
    """LangGraph's long-term store over one server's profiles (``client`` for the sync
    methods, ``aclient`` for the async ones; give the ones the graph uses)."""

    supports_ttl = False

    def __init__(
        self,
        client: MemoryClient | None = None,
        aclient: AsyncMemoryClient | None = None,
        *,
        profile_prefix: str = "lg.",
    ) -> None:
        self.client = client
        self.aclient = aclient
        self.profile_prefix = profile_prefix

    # Names.

    def profile_name(self, namespace: tuple[str, ...]) -> str:
        """The profile a namespace lives in."""
        if not namespace:
            raise InvalidNamespaceError("a namespace needs at least one label")
        name = self.profile_prefix + ".".join(encode_label(label) for label in namespace)
        if len(name) > _MAX_PROFILE:
            raise InvalidNamespaceError(
                f"namespace {namespace!r} makes a profile name of {len(name)} characters;"
                f" the limit is {_MAX_PROFILE}"
            )
        return name

    def namespace_of(self, profile: str) -> tuple[str, ...] | None:
        """The namespace a profile holds, or ``None`` for a profile outside this store."""
        if not profile.startswith(self.profile_prefix):
            return None
        rest = profile[len(self.profile_prefix) :]
        try:
            return tuple(decode_label(label) for label in rest.split("."))
        except (ValueError, UnicodeDecodeError):
            return None

    @staticmethod
    def _item(
        namespace: tuple[str, ...], memory: Memory, score: float | None = None
    ) -> Item | None:
        try:
            stored = json.loads(memory.content)
        except ValueError:
            return None  # a memory this store did not write
        if not isinstance(stored, dict) or not isinstance(stored.get("value"), dict):
            return None
        created = datetime.fromisoformat(str(stored.get("created_at") or _ms(memory.recorded_at)))
        updated = datetime.fromisoformat(_ms(memory.recorded_at))
        if score is None:
            return Item(
                value=stored["value"],
                key=stored["key"],
                namespace=namespace,
                created_at=created,
                updated_at=updated,
            )
        return SearchItem(namespace, stored["key"], stored["value"], created, updated, score)

    @staticmethod
    def _content(key: str, value: dict[str, Any], created_at: str) -> str:
        return json.dumps(
            {"key": key, "value": value, "created_at": created_at},
            ensure_ascii=False,
            sort_keys=True,
        )

    # Sync.

    def _sync(self) -> MemoryClient:
        if self.client is None:
            raise RuntimeError(
                "this MemoryStore has no sync client: pass MemoryStore(client=MemoryClient(...))"
            )
        return self.client

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order."""
        return [self._run(op) for op in ops]

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(
                self._sync().profile(self.profile_name(op.namespace)), op.namespace, op.key
            )
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        return self._list_namespaces(op, self._sync().profiles())

    def _current(self, profile: Profile, key: str) -> Memory | None:
        try:
            page = profile.list_page(key=memory_key(key), limit=1)
        except NotFoundError:
            return None
        return page.memories[0] if page.memories else None

    def _get(self, profile: Profile, namespace: tuple[str, ...], key: str) -> Item | None:
        memory = self._current(profile, key)
        return None if memory is None else self._item(namespace, memory)

    def _put(self, op: PutOp) -> None:
        profile = self._sync().profile(self.profile_name(op.namespace))
        current = self._current(profile, op.key)
        if op.value is None:
            if current is not None:
                profile.forget(current.id, reason="deleted through the LangGraph store")
            return
        created = _now()
        if current is not None and (old := self._item(op.namespace, current)) is not None:
            created = old.created_at.isoformat()
        profile.remember(
            self._content(op.key, dict(op.value), created), kind="fact", key=memory_key(op.key)
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        found: list[SearchItem] = []
        for profile_name in self._sync().profiles():
            namespace = self.namespace_of(profile_name)
            if namespace is None or namespace[: len(op.namespace_prefix)] != tuple(
                op.namespace_prefix
            ):
                continue
            profile = self._sync().profile(profile_name)
            if op.query:
                hits = profile.recall(op.query, limit=_recall_limit(op)).hits
                scored: list[tuple[Memory, float | None]] = [
                    (h.memory, h.score) for h in hits if h.memory is not None
                ]
            else:
                scored = [(m, None) for m in profile.list()]
            found.extend(self._kept(namespace, scored, op))
        return self._page(found, op)

    # Async.

    def _async(self) -> AsyncMemoryClient:
        if self.aclient is None:
            raise RuntimeError(
                "this MemoryStore has no async client:"
                " pass MemoryStore(aclient=AsyncMemoryClient(...))"
            )
        return self.aclient

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Runs the operations in order."""
        return [await self._arun(op) for op in ops]

    async def _arun(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            profile = self._async().profile(self.profile_name(op.namespace))
            memory = await self._acurrent(profile, op.key)
            return None if memory is None else self._item(op.namespace, memory)
        if isinstance(op, PutOp):
            await self._aput(op)
            return None
        if isinstance(op, SearchOp):
            return await self._asearch(op)
        return self._list_namespaces(op, await self._async().profiles())

    async def _acurrent(self, profile: AsyncProfile, key: str) -> Memory | None:
        try:
            page = await profile.list_page(key=memory_key(key), limit=1)
        except NotFoundError:
            return None
        return page.memories[0] if page.memories else None

    async def _aput(self, op: PutOp) -> None:
        profile = self._async().profile(self.profile_name(op.namespace))
        current = await self._acurrent(profile, op.key)
        if op.value is None:
            if current is not None:
                await profile.forget(current.id, reason="deleted through the LangGraph store")
            return
        created = _now()
        if current is not None and (old := self._item(op.namespace, current)) is not None:
            created = old.created_at.isoformat()
        await profile.remember(
            self._content(op.key, dict(op.value), created), kind="fact", key=memory_key(op.key)
        )

    async def _asearch(self, op: SearchOp) -> list[SearchItem]:
        found: list[SearchItem] = []
        for profile_name in await self._async().profiles():
            namespace = self.namespace_of(profile_name)
            if namespace is None or namespace[: len(op.namespace_prefix)] != tuple(
                op.namespace_prefix
            ):
                continue
            profile = self._async().profile(profile_name)
            if op.query:
                hits = (await profile.recall(op.query, limit=_recall_limit(op))).hits
                scored: list[tuple[Memory, float | None]] = [
                    (h.memory, h.score) for h in hits if h.memory is not None
                ]
            else:
                scored = [(m, None) async for m in profile.list()]
            found.extend(self._kept(namespace, scored, op))
        return self._page(found, op)

    # Shared.

    def _kept(
        self, namespace: tuple[str, ...], scored: list[tuple[Memory, float | None]], op: SearchOp
    ) -> list[SearchItem]:
        kept: list[SearchItem] = []
        for memory, score in scored:
            item = self._item(namespace, memory, score if score is not None else 0.0)
            if isinstance(item, SearchItem) and _passes(item.value, op.filter):
                if score is None:
                    item.score = None
                kept.append(item)
        return kept

    @staticmethod
    def _page(found: list[SearchItem], op: SearchOp) -> list[SearchItem]:
        if op.query:
            found.sort(key=lambda i: i.score or 0.0, reverse=True)
        else:
            found.sort(key=lambda i: i.updated_at, reverse=True)
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp, profiles: list[str]) -> list[tuple[str, ...]]:
        namespaces = {ns for p in profiles if (ns := self.namespace_of(p)) is not None}
        selected = [
            ns
            for ns in namespaces
            if all(_condition_holds(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            selected = sorted({ns[: op.max_depth] for ns in selected})
        else:
            selected = sorted(selected)
        return selected[op.offset : op.offset + op.limit]
