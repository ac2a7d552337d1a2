"""The OpenAI Agents SDK over a server session: a ``Runner`` with the SDK's scripted model runs
two turns (a reasoning item, a tool call and its output, messages), the items land in the
server session, the second run reads the first's back, and they equal what the SDK's own
``SQLiteSession`` stores for the same script."""

from __future__ import annotations

from typing import Any

from agents import Agent, Runner, SQLiteSession, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from agent_memory import AsyncMemoryClient
from agent_memory.integrations.openai_agents import ITEM_PART, MemorySession, memory_tools

from .conftest import Served

set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def script() -> ScriptedModel:
    reasoning = ResponseReasoningItem(
        id="rs_1",
        type="reasoning",
        summary=[Summary(type="summary_text", text="Look it up first.")],
    )
    return ScriptedModel(
        [
            [reasoning, function_call("get_weather", {"city": "Lyon"}, call_id="call_1")],
            [assistant_message("It is sunny in Lyon.", item_id="msg_1")],
            [assistant_message("You asked about Lyon.", item_id="msg_2")],
        ]
    )


async def run_twice(session: Any) -> tuple[ScriptedModel, list[str]]:
    model = script()
    agent = Agent(name="Assistant", instructions="Be brief.", model=model, tools=[get_weather])
    outputs = []
    for words in ("What is the weather in Lyon?", "Which city did I ask about?"):
        result = await Runner.run(agent, words, session=session)
        outputs.append(str(result.final_output))
    return model, outputs


async def test_a_runner_stores_and_reads_its_items_on_the_server(server: Served) -> None:
    async with AsyncMemoryClient(server.base_url) as memory:
        session = MemorySession("agents-run", memory, profile="agents-user")
        model, outputs = await run_twice(session)
        assert outputs == ["It is sunny in Lyon.", "You asked about Lyon."]

        # The second turn's model call got the first turn's items from the server.
        second_input = model.calls[-1].input
        assert any(isinstance(i, dict) and i.get("call_id") == "call_1" for i in second_input), (
            second_input
        )

        reference = SQLiteSession("reference")
        await run_twice(reference)
        expected = await reference.get_items()
        stored = await MemorySession("agents-run", memory).get_items()
        assert stored == expected
        types = {i.get("type", "message") for i in stored}
        assert {"reasoning", "function_call", "function_call_output", "message"} <= types, types

        # On the server: one message per item, bound to the profile, searchable by its text.
        server_session = memory.sessions.session("agents-run")
        assert (await server_session.info()).profile == "agents-user"
        history = await server_session.get_history()
        assert len(history) == len(expected)
        assert all(m["parts"][-1]["type"] == ITEM_PART for m in history)
        hits = await server_session.search("sunny Lyon")
        assert hits, "the items' text is searchable"
        assert (await session.get_items(limit=2)) == expected[-2:]

        # pop_item removes the latest leaf; clear_session empties the session, keeping the profile.
        last = await session.pop_item()
        assert last == expected[-1]
        assert await session.get_items() == expected[:-1]
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None
        assert (await server_session.info()).profile == "agents-user"


async def test_a_compaction_summary_reads_back_as_an_input_item(server: Served) -> None:
    async with AsyncMemoryClient(server.base_url) as memory:
        session = MemorySession("agents-compacted", memory)
        await session.add_items(
            [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"turn {i} about the trip",
                }
                for i in range(8)
            ]
        )
        compacted = await memory.sessions.session("agents-compacted").compact()
        assert compacted.compacted
        items = await session.get_items()
        assert items[0] == {"role": "user", "content": "turn 0 about the trip"}
        assert {"role": "assistant", "content": "## Goal\nPlan a trip to Lyon by train."} in items
        assert len(items) < 8


async def test_the_memory_tools_run_on_the_server(server: Served) -> None:
    async with AsyncMemoryClient(server.base_url) as memory:
        session = MemorySession("agents-tools", memory, profile="agents-tools-user")
        tools = await memory_tools(session, ["recall", "remember"])
        assert sorted(t.name for t in tools) == ["recall", "remember"]
        model = ScriptedModel(
            [
                [function_call("remember", {"content": "The user is vegetarian"}, call_id="c1")],
                [assistant_message("Noted.")],
                [function_call("recall", {"query": "vegetarian"}, call_id="c2")],
                [assistant_message("You are vegetarian.")],
            ]
        )
        agent = Agent(name="Assistant", model=model, tools=tools)
        await Runner.run(agent, "Remember that I am vegetarian.", session=session)
        stored = [m.content async for m in memory.profile("agents-tools-user").list()]
        assert stored == ["The user is vegetarian"]
        await Runner.run(agent, "What do I eat?", session=session)
        outputs = [i for i in await session.get_items() if i.get("type") == "function_call_output"]
        assert "The user is vegetarian" in str(outputs[-1]["output"]), outputs


async def test_a_compaction_keeps_a_call_with_its_output_and_clear_keeps_the_session(
    server: Served,
) -> None:
    async with AsyncMemoryClient(server.base_url) as memory:
        session = MemorySession("agents-paired", memory, profile="agents-paired-user")
        items: list[Any] = [{"role": "user", "content": "turn 0 about the trip"}]
        for i in range(1, 4):
            items.append({"role": "assistant", "content": f"turn {i} about the trip"})
        items.append(
            {"type": "function_call", "call_id": "c9", "name": "get_weather", "arguments": "{}"}
        )
        items.append({"type": "function_call_output", "call_id": "c9", "output": "sunny"})
        items.append({"role": "assistant", "content": "It is sunny."})
        await session.add_items(items)
        server_session = memory.sessions.session("agents-paired")
        await server_session.replace_context_block("memory", "kept across a clear")
        assert (await server_session.compact()).compacted
        after = await session.get_items()
        calls = {i["call_id"] for i in after if i.get("type") == "function_call"}
        outputs = {i["call_id"] for i in after if i.get("type") == "function_call_output"}
        assert calls == outputs, after

        await session.clear_session()
        assert await session.get_items() == []
        info = await server_session.info()
        assert info.profile == "agents-paired-user"
        assert (await server_session.get_context_block("memory")).content == "kept across a clear"
        await session.add_items([{"role": "user", "content": "a fresh start"}])
        assert await session.get_items() == [{"role": "user", "content": "a fresh start"}]
