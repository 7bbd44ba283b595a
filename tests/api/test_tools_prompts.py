"""Tools from callables (schema from signature + docstring, validated calls) and prompts."""

from __future__ import annotations

import pytest

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.prompts.prompt import LocalPrompt, Prompt
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import Tool, ToolType
from flink_agents.errors import ToolArgumentError
from tests.runtime.agents import add


def search(query: str, limit: int = 5, tags: list[str] | None = None) -> list[str]:
    """Search the catalog.

    Longer explanation of the search.

    Args:
        query: what to look for.
        limit: the most results to return.
        tags: only items with these tags.
    """
    return [query] * limit


def test_schema_from_signature_and_docstring():
    tool = Tool.from_callable(search)
    assert tool.name == "search" and tool.tool_type() is ToolType.FUNCTION
    assert tool.metadata.description.startswith("Search the catalog.")
    schema = tool.metadata.args_schema
    assert schema["type"] == "object" and schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"type": "string", "description": "what to look for."}
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["limit"]["type"] == "integer"
    assert tool.metadata.to_openai_tool()["function"]["parameters"] == schema


def test_call_validates_and_coerces_arguments():
    tool = Tool.from_callable(add)
    assert tool.call(a=1, b="2") == 3
    with pytest.raises(ToolArgumentError, match="a: Input should be a valid integer"):
        tool.call(a="one", b=2)
    with pytest.raises(ToolArgumentError, match="b: Field required"):
        tool.call(a=1)
    with pytest.raises(ToolArgumentError, match="unexpected argument"):
        tool.call(a=1, b=2, c=3)


def test_function_tool_round_trips_as_json():
    tool = FunctionTool.from_callable(search)
    again = FunctionTool.model_validate_json(tool.model_dump_json())
    assert again.call(query="x", limit=2) == ["x", "x"]
    assert again.metadata == tool.metadata


def test_lambda_tool_needs_pickle_opt_in():
    with pytest.raises(ValueError, match="is a lambda"):
        Tool.from_callable(lambda x: x)
    tool = FunctionTool.from_callable(lambda x: x, name="ident", allow_pickle=True)
    assert FunctionTool.model_validate_json(tool.model_dump_json()).call(x=4) == 4


async def test_async_tool_is_awaited():
    async def twice(x: int) -> int:
        return 2 * x

    tool = FunctionTool.from_callable(twice, allow_pickle=True)
    assert await tool.acall(x=4) == 8
    assert await Tool.from_callable(add).acall(a=1, b=1) == 2


def test_prompt_text_and_messages():
    text = Prompt.from_text('Hello {name}, JSON {{"a": 1}} stays, {unknown} too')
    assert text.format_string(name="Ann") == 'Hello Ann, JSON {{"a": 1}} stays, {unknown} too'
    assert text.variables == {"name", "unknown"}
    (msg,) = text.format_messages(name="Bo")
    assert msg.role is MessageRole.SYSTEM and msg.content.startswith("Hello Bo")
    msgs = Prompt.from_messages(
        [
            ChatMessage(role=MessageRole.SYSTEM, content="You rate {thing}."),
            ChatMessage(role=MessageRole.USER, content="{input}"),
        ]
    )
    out = msgs.format_messages(thing="reviews", input="great")
    assert [(m.role, m.content) for m in out] == [
        (MessageRole.SYSTEM, "You rate reviews."),
        (MessageRole.USER, "great"),
    ]
    assert msgs.format_string(thing="x", input="y") == "system: You rate x.\nuser: y"
    assert LocalPrompt.model_validate_json(msgs.model_dump_json()) == msgs
