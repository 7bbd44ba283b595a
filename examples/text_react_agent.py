"""Text ReAct agent: tools for a model without native tool calling, plus an interceptor.

What it shows:

- ``ReActAgent(..., tool_calling="text")``: the tools are described in the system prompt
  and the model answers in the ReAct text format (``Thought:`` / ``Action:`` /
  ``Action Input:``, then ``Answer:``); the agent parses each reply, runs the tool and
  sends the result back as ``Observation:``. A reply that does not parse goes back to the
  model as an observation; ``max_iterations`` bounds the loop.
- ``return_reasoning=True``: the output carries the model's thoughts and the tool calls.
- a model interceptor (:func:`strip_think_tags`) that cleans every model reply before the
  agent parses it, and a tool interceptor (:func:`only_small_numbers`) acting as a
  guardrail on the tool's arguments.

Model: the **scripted model** (offline, deterministic) by default; ``--provider local``
runs the real local LLM (``make model``) at temperature 0.

Run: ``python -m examples.text_react_agent [--provider local]``.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.chat_message import ChatMessage
from flink_agents.api.interceptors import CallNext, ModelCallRequest, ToolCallRequest
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup


def multiply(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: the first factor.
        b: the second factor.
    """
    return a * b


_THINK = re.compile(r"<think>.*?</think>", re.S)


async def strip_think_tags(request: ModelCallRequest, call_next: CallNext) -> ChatMessage:
    """Model interceptor: drops ``<think>...</think>`` blocks some models write."""
    reply: ChatMessage = await call_next(request)
    return reply.model_copy(update={"content": _THINK.sub("", reply.content).strip()})


async def only_small_numbers(request: ToolCallRequest, call_next: CallNext) -> Any:
    """Tool interceptor: a guardrail that refuses huge arguments (the model sees why)."""
    if any(abs(float(v)) > 1e6 for v in request.arguments.values()):
        return "refused: the arguments must be at most one million"
    return await call_next(request)


def scripted_react_model(messages: list[ChatMessage], tools: list[Any]) -> str:
    """A stand-in for a model without tool calling: acts once, then answers."""
    last = messages[-1].content
    if last.startswith("Observation:"):
        result = last.splitlines()[0][len("Observation:") :].strip()
        return f"<think>the tool answered</think>Thought: I have the result.\nAnswer: {result}"
    numbers = re.findall(r"\d+(?:\.\d+)?", last)
    a, b = [*numbers, "0", "0"][:2]
    return (
        "Thought: I should multiply the two numbers.\n"
        "Action: multiply\n"
        f"Action Input: {{'a': {a}, 'b': {b}}}"
    )


def build_agent(provider: str = "scripted") -> ReActAgent:
    """The calculator agent.

    Args:
        provider: ``"scripted"`` (offline stand-in) or ``"local"`` (the local LLM).
    """
    if provider == "local":
        from flink_agents.integrations.chat_models.local_llama import (
            LocalLlamaChatModelConnection,
            LocalLlamaChatModelSetup,
        )

        connection = ResourceDescriptor(
            clazz=LocalLlamaChatModelConnection, temperature=0.0, max_tokens=128
        )
        setup = ResourceDescriptor(
            clazz=LocalLlamaChatModelSetup, connection="calc_model", tools=["multiply"]
        )
    else:
        connection = ResourceDescriptor(
            clazz=ScriptedChatModelConnection, respond=scripted_react_model, name="calc"
        )
        setup = ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="calc_model", tools=["multiply"]
        )
    agent = ReActAgent(
        chat_model=setup,
        tool_calling="text",
        return_reasoning=True,
        max_iterations=4,
        model_interceptors=[strip_think_tags],
        tool_interceptors=[only_small_numbers],
        name="calculator",
        description="Answers arithmetic questions with a multiply tool.",
    )
    agent.add_resource("calc_model", connection)
    agent.add_resource("multiply", multiply)
    return agent


QUESTIONS = ["What is 17 times 23?", "Multiply 2000000 by 3."]


def main(provider: str = "scripted") -> list[dict[str, Any]]:
    """Answer the sample questions locally; prints and returns the outputs."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    out = (
        env.from_list([{"key": f"q{i}", "value": q} for i, q in enumerate(QUESTIONS)])
        .apply(build_agent(provider))
        .to_list()
    )
    env.execute()
    for record in out:
        print(record)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", choices=["scripted", "local"], default="scripted")
    main(parser.parse_args().provider)
