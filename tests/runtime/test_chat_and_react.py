"""The built-in chat/tool actions and ReActAgent, with the scripted model."""

from __future__ import annotations

import json

import pytest
from pyflink.common import Types  # RowTypeInfo schemas only; nothing of Flink runs here

from flink_agents.api.agents.react_agent import ErrorHandlingStrategy, ReActAgent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.errors import ModelCallError, OutputSchemaError
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup, tool_call
from tests.runtime import agents


def scripted(replies, tools=("add",), **kw):
    return {
        "conn": ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=replies, **kw),
        "setup": ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=list(tools)
        ),
    }


def run(agent, records, resources, **config):
    env = AgentsExecutionEnvironment.get_execution_environment()
    for name, value in resources.items():
        env.add_resource(name, value)
    for k, v in config.items():
        env.get_config().set_str(k, v)
    out = env.from_list(records).apply(agent).to_list()
    env.execute()
    return [next(iter(o.values())) for o in out]


def tool_agent_resources(respond="tests.runtime.agents:echo_tool_results", tools=("multiply",)):
    return {
        "conn": ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=respond),
        "model": ResourceDescriptor(
            clazz=ScriptedChatModelSetup, connection="conn", tools=list(tools)
        ),
    }


def test_tool_loop_result_goes_back_with_its_id():
    out = run(
        agents.ToolAgent(),
        [{"key": "k", "value": {"tool": "multiply", "args": {"a": 6, "b": 7}}}],
        tool_agent_resources(),
    )
    assert out == ["multiply[c1]=42"]


def test_unknown_tool_becomes_an_error_response_the_model_sees():
    out = run(
        agents.ToolAgent(),
        [{"key": "k", "value": {"tool": "teleport", "args": {}}}],
        tool_agent_resources(),
    )
    assert out[0] == (
        "teleport[c1]=Error: unknown tool 'teleport'; the tools you can call are: multiply"
    )


def test_tool_with_wrong_arguments_becomes_an_error_response():
    out = run(
        agents.ToolAgent(),
        [{"key": "k", "value": {"tool": "multiply", "args": {"a": "six", "b": 7}}}],
        tool_agent_resources(),
    )
    assert "ToolArgumentError" in out[0] and "a: Input should be a valid integer" in out[0]


def test_tool_exception_becomes_an_error_response():
    out = run(
        agents.ToolAgent(),
        [{"key": "k", "value": {"tool": "explode", "args": {"reason": "boom"}}}],
        tool_agent_resources(tools=("multiply", "explode")),
    )
    assert out == ["explode[c1]=Error: tool 'explode' failed: RuntimeError: exploded: boom"]


def always_call_tool(messages, tools):
    return tool_call("multiply", a=1, b=1)


def test_max_iterations_bounds_the_tool_loop():
    with pytest.raises(ModelCallError, match=r"max-iterations \(3\)"):
        run(
            agents.ToolAgent(),
            [{"key": "k", "value": {}}],
            tool_agent_resources(respond="tests.runtime.test_chat_and_react:always_call_tool"),
            **{"max-iterations": 3},
        )


def react(output_schema=agents.Answer, replies=(), prompt=None, **kw):
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["add"])
    agent = ReActAgent(chat_model=setup, prompt=prompt, output_schema=output_schema, **kw)
    agent.add_resource("add", agents.add)
    conn = ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=list(replies))
    return agent, {"conn": conn}


def test_react_agent_with_tool_and_pydantic_schema():
    agent, resources = react(
        replies=[
            tool_call("add", a=2, b=3),
            '```json\n{"total": 5, "explanation": "2 + 3"}\n```',
        ],
        prompt=Prompt.from_text("Add the numbers in: {input}"),
    )
    out = run(agent, [{"key": "q", "value": "2 and 3"}], resources)
    assert out == [agents.Answer(total=5, explanation="2 + 3")]


def answer_if_schema_given(messages, tools):
    system = [m.content for m in messages if m.role is MessageRole.SYSTEM]
    if system and '"total"' in system[0] and "JSON schema" in system[0]:
        return '{"total": 1, "explanation": "schema seen"}'
    return "no schema in the prompt"


def test_react_agent_tells_the_model_the_schema():
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn")
    agent = ReActAgent(chat_model=setup, output_schema=agents.Answer)
    conn = ResourceDescriptor(
        clazz=ScriptedChatModelConnection,
        respond="tests.runtime.test_chat_and_react:answer_if_schema_given",
    )
    out = run(agent, [{"key": "q", "value": "x"}], {"conn": conn})
    assert out == [agents.Answer(total=1, explanation="schema seen")]


def test_react_bad_reply_fail_strategy():
    agent, resources = react(replies=['{"total": "lots"}'])
    with pytest.raises(OutputSchemaError, match="total: Input should be a valid integer"):
        run(agent, [{"key": "q", "value": "x"}], resources)


def test_react_bad_reply_retry_strategy_asks_again():
    agent, resources = react(
        replies=["not json at all", '{"total": 3, "explanation": "ok"}'],
        error_handling_strategy=ErrorHandlingStrategy.RETRY,
        retry_wait=0.01,
    )
    out = run(agent, [{"key": "q", "value": "x"}], resources)
    assert out == [agents.Answer(total=3, explanation="ok")]


def test_react_bad_reply_retry_strategy_gives_up():
    agent, resources = react(
        replies=["nope"] * 3, error_handling_strategy="retry", max_retries=2, retry_wait=0
    )
    with pytest.raises(OutputSchemaError, match="after 2 retries"):
        run(agent, [{"key": "q", "value": "x"}], resources)


def test_react_bad_reply_ignore_strategy_outputs_nothing_and_goes_on(caplog):
    agent, resources = react(
        replies=["nope", '{"total": 7, "explanation": "fine"}'],
        error_handling_strategy="ignore",
    )
    out = run(agent, [{"key": "a", "value": "x"}, {"key": "a", "value": "y"}], resources)
    assert out == [agents.Answer(total=7, explanation="fine")]
    assert any("model reply does not match" in r.message for r in caplog.records)


def test_react_with_row_type_info_schema():
    schema = Types.ROW_NAMED(["name", "age"], [Types.STRING(), Types.INT()])
    agent, resources = react(output_schema=schema, replies=['{"name": "Ann", "age": 41}'])
    (row,) = run(agent, [{"key": "q", "value": {"text": "Ann is 41"}}], resources)
    assert row.as_dict() == {"name": "Ann", "age": 41}


def test_react_without_schema_outputs_text_and_formats_pydantic_input():
    agent, resources = react(
        output_schema=None,
        replies=["plain answer"],
        prompt=Prompt.from_text("total {total}, because {explanation}"),
    )
    out = run(agent, [{"key": "q", "value": agents.Answer(total=1, explanation="e")}], resources)
    assert out == ["plain answer"]


def test_prompt_is_applied_by_the_chat_model_setup():
    captured: list[list[ChatMessage]] = []

    setup = ScriptedChatModelSetup(
        connection="c",
        prompt=Prompt.from_messages(
            [
                ChatMessage(role=MessageRole.SYSTEM, content="be brief"),
                ChatMessage(role=MessageRole.USER, content="review: {input} {missing}"),
            ]
        ),
    )
    messages = setup.prepare_messages([ChatMessage()], {"input": json.dumps({"a": 1})})
    captured.append(messages)
    assert [m.content for m in messages] == ["be brief", 'review: {"a": 1} {missing}']


def test_message_extra_args_do_not_fill_the_prompt_and_a_hint_is_logged(caplog):
    """As in Apache Flink Agents 0.3: only prompt_args fill the template; extra_args named
    like a placeholder get a one-time warning that says how to migrate."""
    setup = ScriptedChatModelSetup(connection="c", prompt=Prompt.from_text("review: {input}"))
    with caplog.at_level("WARNING"):
        first = setup.prepare_messages([ChatMessage(extra_args={"input": "x"})])
        setup.prepare_messages([ChatMessage(extra_args={"input": "y"})])
    assert [m.content for m in first] == ["review: {input}"]
    hints = [r for r in caplog.records if "prompt_args" in r.getMessage()]
    assert len(hints) == 1 and "'input'" in hints[0].getMessage()


def test_tool_is_found_by_the_name_the_model_saw():
    """A tool whose metadata name differs from its resource name is still callable."""
    from flink_agents.api.tools.function_tool import FunctionTool

    resources = tool_agent_resources(tools=("math_tool",))
    resources["math_tool"] = FunctionTool.from_callable(agents.add)  # metadata name "add"
    out = run(
        agents.ToolAgent(),
        [{"key": "k", "value": {"tool": "add", "args": {"a": 2, "b": 5}}}],
        resources,
    )
    assert out == ["add[c1]=7"]
