"""The memory tools as plain functions with JSON schemas, for any framework: a session's
tools as the server defines them (context tools, search, and ``recall``/``remember``/``forget``
when the session is bound to a profile), each callable with its arguments and run on the
server.

>>> tools = session_tools(memory.sessions.session("s1"))
>>> openai_tools = [t.to_openai() for t in tools]        # hand to any chat API
>>> text = tools[0](label="memory", content="Likes tea")  # run what the model asked for
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ._async_client import AsyncSession
from ._sync_client import Session


def _openai(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


@dataclass(frozen=True)
class Tool:
    """A tool: its name, description and JSON input schema; calling it runs it on the server
    and returns the text the model reads (a refusal too, starting with ``Error:``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], str]

    def __call__(self, **arguments: Any) -> str:
        return self.run(arguments)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling shape."""
        return _openai(self.name, self.description, self.parameters)


@dataclass(frozen=True)
class AsyncTool:
    """A tool whose call is awaited (see ``Tool``)."""

    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[str]]

    async def __call__(self, **arguments: Any) -> str:
        return await self.run(arguments)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI function-calling shape."""
        return _openai(self.name, self.description, self.parameters)


def session_tools(session: Session) -> list[Tool]:
    """The session's tools as plain functions (one request for the definitions)."""

    def runner(name: str) -> Callable[[dict[str, Any]], str]:
        return lambda arguments: session.execute_tool(name, arguments).result

    return [
        Tool(t.name, t.description, t.input_schema, runner(t.name))
        for t in session.tool_definitions()
    ]


async def async_session_tools(session: AsyncSession) -> list[AsyncTool]:
    """The session's tools as awaitable functions (one request for the definitions)."""

    def runner(name: str) -> Callable[[dict[str, Any]], Awaitable[str]]:
        async def run(arguments: dict[str, Any]) -> str:
            return (await session.execute_tool(name, arguments)).result

        return run

    return [
        AsyncTool(t.name, t.description, t.input_schema, runner(t.name))
        for t in await session.tool_definitions()
    ]
