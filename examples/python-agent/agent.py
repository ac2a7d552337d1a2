"""An OpenAI Agents SDK agent whose memory is a local ``memory serve``: its conversation is a
server session (``MemorySession``), its tools include ``recall`` and ``remember`` run by the
server, and the session is bound to a long-term profile, so a later conversation recalls what
an earlier one learned.

    memory serve                                              # in another terminal
    pip install "./clients/python[openai-agents]"
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.1 \
        python examples/python-agent/agent.py
    python examples/python-agent/agent.py   # without OPENAI_BASE_URL: a scripted model
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from agents import Agent, Model, Runner, set_tracing_disabled

from agent_memory import AsyncMemoryClient
from agent_memory.integrations.openai_agents import MemorySession, memory_tools


def model() -> Model:
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url:
        from agents import OpenAIChatCompletionsModel
        from openai import AsyncOpenAI

        openai = AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
        return OpenAIChatCompletionsModel(os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), openai)
    # No model server: a scripted stand-in that calls the memory tools, then answers with
    # what the tool returned.
    from agents.testing import (
        ModelCall,
        ModelStep,
        ScriptedModel,
        assistant_message,
        function_call,
    )

    def answer_from_tool(call: ModelCall) -> list[Any]:
        outputs = [
            i for i in call.input if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        return [
            assistant_message(
                f"From memory: {outputs[-1]['output']}" if outputs else "I don't know."
            )
        ]

    set_tracing_disabled(True)
    return ScriptedModel(
        [
            [
                function_call(
                    "remember",
                    {"content": "The user is vegetarian and lives in Lyon"},
                    call_id="c1",
                )
            ],
            ModelStep.respond(answer_from_tool),
            [function_call("recall", {"query": "where does the user live"}, call_id="c2")],
            ModelStep.respond(answer_from_tool),
        ]
    )


async def main() -> None:
    profile = os.environ.get("MEMORY_PROFILE", "example-user")
    llm = model()
    async with AsyncMemoryClient(
        os.environ.get("MEMORY_URL", "http://127.0.0.1:8787"),
        api_key=os.environ.get("MEMORY_API_KEY"),
    ) as memory:
        first = MemorySession(f"chat-{uuid.uuid4().hex[:8]}", memory, profile=profile)
        agent = Agent(
            name="Assistant",
            instructions="Use your memory tools.",
            model=llm,
            tools=await memory_tools(first),
        )
        result = await Runner.run(
            agent,
            "Please remember that I am vegetarian and live in Lyon.",
            session=first,
        )
        print(f"assistant: {result.final_output}")
        ended = await (await first.session()).end(reason="conversation over")
        if ended.shipped is not None and ended.shipped.job is not None:
            await memory.profile(profile).wait_for_job(ended.shipped.job.id)

        second = MemorySession(f"chat-{uuid.uuid4().hex[:8]}", memory, profile=profile)
        agent = Agent(
            name="Assistant",
            instructions="Use your memory tools.",
            model=llm,
            tools=await memory_tools(second),
        )
        result = await Runner.run(agent, "Where do I live?", session=second)
        print(f"assistant: {result.final_output}")


if __name__ == "__main__":
    asyncio.run(main())
