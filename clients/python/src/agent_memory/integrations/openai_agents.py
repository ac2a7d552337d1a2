"""A ``Session`` for the OpenAI Agents SDK backed by a ``memory serve`` session.

Each item the SDK stores becomes one message of the server session: the item itself, kept
verbatim in a ``data-openai-agents-item`` part (so every item type round-trips), beside a text
part that full-text search and compaction read. ``get_items`` returns the history of the
latest leaf, so a compaction's summary stands in for the range it covers; ``pop_item``
removes the latest leaf; ``clear_session`` starts the session over with the same id and
profile. Bound to a profile, the session ships its history there at compaction and at its
end, and its tools (``session.tools()``) include ``recall`` and ``remember``.

>>> from agents import Agent, Runner
>>> from agent_memory import AsyncMemoryClient
>>> from agent_memory.integrations.openai_agents import MemorySession
>>> session = MemorySession("user-42", AsyncMemoryClient(), profile="user-42")
>>> agent = Agent(name="Assistant", tools=await memory_tools(session))  # recall, remember, ...
>>> result = await Runner.run(agent, "Hi", session=session)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._async_client import AsyncMemoryClient, AsyncSession
from ..errors import ConflictError, NotFoundError

if TYPE_CHECKING:
    from agents import FunctionTool
    from agents.items import TResponseInputItem
    from agents.memory.session_settings import SessionSettings

ITEM_PART = "data-openai-agents-item"
"""The part type that holds an SDK item verbatim."""

_BATCH = 1_000  # the server's largest append
_BATCH_BYTES = 8 * 1024 * 1024  # well under the server's 16 MiB body limit


def item_text(item: dict[str, Any]) -> str:
    """The searchable text of an item: a message's text, a call's name and arguments, a
    tool's output."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        ]
        if texts:
            return "\n".join(t for t in texts if t is not None)
    if item.get("type") == "function_call":
        return f"{item.get('name')}({item.get('arguments', '')})"
    output = item.get("output")
    if isinstance(output, str):
        return output
    if output is not None:
        return json.dumps(output, ensure_ascii=False)
    summary = item.get("summary")
    if isinstance(summary, list):
        return "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, dict))
    return ""


def _tool_part(item: dict[str, Any]) -> dict[str, Any] | None:
    """A call or its output as an AI SDK tool part, so the server keeps the pair on one side
    of a compaction's cut (it reads tool parts by call id)."""
    call_id = item.get("call_id")
    kind = item.get("type")
    if not isinstance(call_id, str) or not isinstance(kind, str):
        return None
    name = str(item.get("name") or kind.removesuffix("_output").removesuffix("_call"))
    if kind.endswith("_output"):
        return {
            "type": "dynamic-tool",
            "toolName": name,
            "toolCallId": call_id,
            "state": "output-available",
            "input": None,
            "output": item.get("output"),
        }
    if kind.endswith("_call"):
        return {
            "type": "dynamic-tool",
            "toolName": name,
            "toolCallId": call_id,
            "state": "input-available",
            "input": item.get("arguments", item.get("action")),
        }
    return None


def item_to_message(item: dict[str, Any]) -> dict[str, Any]:
    """The UIMessage that stores ``item``: its text, its call as a tool part (for a call or
    an output), and the item itself."""
    role = item.get("role")
    if role not in ("user", "assistant", "system"):
        role = "system" if role == "developer" else "assistant"
    parts: list[dict[str, Any]] = []
    text = item_text(item)
    if text:
        parts.append({"type": "text", "text": text})
    tool = _tool_part(item)
    if tool is not None:
        parts.append(tool)
    parts.append({"type": ITEM_PART, "data": item})
    return {"id": f"item-{uuid.uuid4().hex}", "role": role, "parts": parts}


def message_to_item(message: dict[str, Any]) -> dict[str, Any]:
    """The SDK item a stored message holds; a message without one (a compaction's summary,
    or one another client appended) becomes an easy input message with its text."""
    for part in message.get("parts", []):
        if isinstance(part, dict) and part.get("type") == ITEM_PART:
            data: dict[str, Any] = part["data"]
            return data
    text = "\n".join(
        p["text"]
        for p in message.get("parts", [])
        if isinstance(p, dict) and isinstance(p.get("text"), str)
    )
    return {"role": message.get("role", "user"), "content": text}


class MemorySession:
    """The OpenAI Agents SDK's ``Session`` protocol over a server session ``session_id``
    (created on first use, bound to ``profile`` when given)."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        client: AsyncMemoryClient,
        *,
        profile: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.profile = profile
        self.session_settings = session_settings
        self._ready = False
        self._lock = asyncio.Lock()

    async def session(self) -> AsyncSession:
        """The server session, created (and bound) the first time it is needed."""
        handle = self.client.sessions.session(self.session_id)
        if self._ready:
            return handle
        try:
            info = await handle.info()
        except NotFoundError:
            # Another caller may have created it first.
            with contextlib.suppress(ConflictError):
                await self.client.sessions.create(id=self.session_id, profile=self.profile)
        else:
            if self.profile is not None and info.profile != self.profile:
                await handle.bind(self.profile)
        self._ready = True
        return handle

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The history's items, oldest first (the latest ``limit`` when given)."""
        session = await self.session()
        items = [message_to_item(m) for m in await session.get_history()]
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items  # type: ignore[return-value]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Appends the items, in order, after the latest leaf: atomically up to 1,000 items
        and 8 MiB, in several appends beyond that."""
        if not items:
            return
        async with self._lock:
            session = await self.session()
            batch: list[dict[str, Any]] = []
            size = 0
            for item in items:
                message = item_to_message(dict(item))
                length = len(json.dumps(message, ensure_ascii=False))
                if batch and (len(batch) == _BATCH or size + length > _BATCH_BYTES):
                    await session.append_messages(batch)
                    batch, size = [], 0
                batch.append(message)
                size += length
            if batch:
                await session.append_messages(batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Removes the latest leaf and returns its item (``None`` for an empty session)."""
        async with self._lock:
            session = await self.session()
            leaf = await session.get_latest_leaf()
            if leaf is None:
                return None
            await session.delete_message(leaf["id"])
            return message_to_item(leaf)  # type: ignore[return-value]

    async def clear_session(self) -> None:
        """Deletes every message of the server session (its record, binding and blocks stay;
        what it shipped to the profile stays there)."""
        async with self._lock:
            session = await self.session()
            ids = []
            async for line in session.export_lines():
                record = json.loads(line)
                message = record.get("message") if record.get("kind") == "message" else None
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    ids.append(message["id"])
            for start in range(0, len(ids), _BATCH):
                await session.delete_messages(ids[start : start + _BATCH])


async def memory_tools(
    session: MemorySession, names: Sequence[str] | None = None
) -> list[FunctionTool]:
    """The server session's tools (``recall``, ``remember`` and ``forget`` when it is bound
    to a profile, the context tools, ``session_search``) as the SDK's function tools, run by
    the server's tool executor; ``names`` keeps only those."""
    from agents import FunctionTool

    server_session = await session.session()
    tools = []
    for definition in await server_session.tool_definitions():
        if names is not None and definition.name not in names:
            continue

        async def invoke(_context: Any, arguments: str, name: str = definition.name) -> str:
            parsed = json.loads(arguments) if arguments.strip() else {}
            return (await server_session.execute_tool(name, parsed)).result

        tools.append(
            FunctionTool(
                name=definition.name,
                description=definition.description,
                params_json_schema=definition.input_schema,
                on_invoke_tool=invoke,
                strict_json_schema=False,
            )
        )
    return tools
