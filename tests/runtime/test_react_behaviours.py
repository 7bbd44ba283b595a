"""ReActAgent behaviours: text ReAct, RETRY asking again, reasoning, input schema, names."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from flink_agents.api.agents.react_agent import ReActAgent
from flink_agents.api.agents.text_react import parse_react, tools_prompt
from flink_agents.api.resource import ResourceDescriptor
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.errors import InputSchemaError, OutputSchemaError
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing import ScriptedChatModelConnection, ScriptedChatModelSetup
from tests.runtime import agents
from tests.runtime import behaviour_agents as ba
from tests.runtime.test_chat_and_react import run


class Question(BaseModel):
    """An input schema."""

    text: str
    urgent: bool = False


def react(replies, tools=("add",), **kw):
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=list(tools))
    agent = ReActAgent(chat_model=setup, **kw)
    agent.add_resource("add", agents.add)
    conn = ResourceDescriptor(
        clazz=ScriptedChatModelConnection, replies=list(replies), name="react", cycle=True
    )
    return agent, {"conn": conn}


@pytest.fixture(autouse=True)
def _fresh():
    ba.reset()


# -- the text ReAct parser ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}',
        "```\nThought: add\nAction: add\nAction Input: {'a': 2, 'b': 3}\n```\nI hope it helps.",
        'Action: `add`\nAction Input: ```json\n{"a": 2, "b": 3}\n```\nObservation: 5\nAnswer: 5',
        'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3} and then I will answer',
    ],
)
def test_parser_reads_actions_despite_quirks(reply):
    step = parse_react(reply)
    assert (step.action, step.action_input, step.answer) == ("add", {"a": 2, "b": 3}, None)


def test_parser_reads_answers_and_rejects_the_rest():
    assert parse_react("Thought: easy\nFinal Answer: 42").answer == "42"
    assert parse_react('Answer: {"x": {"y": 1}}').answer == '{"x": {"y": 1}}'
    assert parse_react("Thought: hm\nAnswer: 5").thought == "hm"
    with pytest.raises(ValueError, match="neither 'Action:'"):
        parse_react("The answer is five.")
    with pytest.raises(ValueError, match="not a complete JSON object"):
        parse_react("Action: add\nAction Input: {'a': 2")


def test_tools_prompt_describes_tools_and_the_format():
    text = tools_prompt([FunctionTool.from_callable(agents.add)])
    assert "- add: Add two numbers." in text and '"a"' in text and "Action Input:" in text


# -- text ReAct through the agent ----------------------------------------------------------------
def text_script(messages, tools):
    """A model without native tools: checks it was offered none and that the observation
    came back, then answers."""
    assert tools == [], "text mode must not offer tools natively"
    assert "- add: Add two numbers." in messages[0].content
    last = messages[-1].content
    if last.startswith("Observation: 5"):
        return "Thought: the tool said 5\nAnswer: 5"
    if last.startswith("Observation: invalid reply"):
        return "```\nThought: use the tool\nAction: add\nAction Input: {'a': 2, 'b': 3}\n```"
    return "I think it is five"  # malformed: no Action, no Answer


def test_text_react_runs_tools_from_parsed_replies_and_recovers_from_bad_ones():
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn", tools=["add"])
    agent = ReActAgent(chat_model=setup, tool_calling="text", return_reasoning=True, name="adder")
    agent.add_resource("add", agents.add)
    conn = ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=text_script, name="t")
    out = run(agent, [{"key": "q", "value": "2 + 3?"}], {"conn": conn})
    assert out == [
        {
            "output": "5",
            "reasoning": ["use the tool", "the tool said 5"],
            "tool_trace": [
                {"tool": "add", "arguments": {"a": 2, "b": 3}, "result": "5", "is_error": False}
            ],
        }
    ]
    assert ScriptedChatModelConnection.call_counts["t"] == 3  # bad reply, action, answer


def test_text_react_that_never_parses_ends_at_max_iterations_naming_the_last_reply():
    agent, resources = react(["gibberish reply"], tool_calling="text", max_iterations=3)
    with pytest.raises(OutputSchemaError, match=r"after 3 model calls.*'gibberish reply'"):
        run(agent, [{"key": "q", "value": "x"}], resources)
    assert ScriptedChatModelConnection.call_counts["react"] == 3


def test_text_react_with_output_schema_and_tool_interceptor():
    agent, resources = react(
        [
            'Action: add\nAction Input: {"a": 1, "b": 1}',
            'Answer: {"total": 3, "explanation": "1 + (1+1)"}',
        ],
        tool_calling="text",
        output_schema=agents.Answer,
        tool_interceptors=[ba.block_dangerous_tools],  # adds 1 to b
    )
    out = run(agent, [{"key": "q", "value": "x"}], resources)
    assert out == [agents.Answer(total=3, explanation="1 + (1+1)")]
    assert ba.SEEN["tool_interceptor"] == [("add", {"a": 1, "b": 1})]


# -- ReAct details -------------------------------------------------------------------------------
def test_configured_retry_asks_the_model_again_with_the_problem():
    agent, resources = react(
        ["not json", '{"total": 3, "explanation": "ok"}'],
        output_schema=agents.Answer,
        retry_wait=0,
    )
    out = run(
        agent, [{"key": "q", "value": "x"}], resources, **{"error-handling-strategy": "retry"}
    )
    assert out == [agents.Answer(total=3, explanation="ok")]
    assert ScriptedChatModelConnection.call_counts["react"] == 2


def test_native_return_reasoning_has_the_tool_trace():
    from flink_agents.testing import tool_call

    reply = tool_call("add", call_id="c1", a=2, b=2)
    reply["content"] = "adding first"
    agent, resources = react([reply, "4"], return_reasoning=True)
    out = run(agent, [{"key": "q", "value": "2+2"}], resources)
    assert out == [
        {
            "output": "4",
            "reasoning": ["adding first"],
            "tool_trace": [
                {"tool": "add", "arguments": {"a": 2, "b": 2}, "result": "4", "is_error": False}
            ],
        }
    ]


def test_input_schema_validates_inputs_under_the_error_strategy():
    agent, resources = react(["fine"], input_schema=Question)
    good = [{"key": "a", "value": {"text": "hi"}}, {"key": "b", "value": '{"text": "json"}'}]
    assert run(agent, good, resources) == ["fine", "fine"]
    agent, resources = react(["fine"], input_schema=Question)
    with pytest.raises(InputSchemaError, match=r"Question: text: Field required"):
        run(agent, [{"key": "a", "value": {"txt": "typo"}}], resources)
    agent, resources = react(["fine"], input_schema=Question)
    out = run(
        agent,
        [{"key": "a", "value": {"urgent": "very"}}, {"key": "a", "value": {"text": "ok"}}],
        resources,
        **{"error-handling-strategy": "ignore"},
    )
    assert out == ["fine"]


def test_retry_does_not_repeat_an_input_schema_error(caplog):
    # The same input fails validation the same way: RETRY fails at once instead of waiting
    # out max-retries rounds of retry-wait.
    agent, resources = react(["fine"], input_schema=Question)
    with caplog.at_level("WARNING", logger="flink_agents"):
        with pytest.raises(InputSchemaError, match="Field required"):
            run(
                agent,
                [{"key": "a", "value": {"txt": "typo"}}],
                resources,
                **{
                    "error-handling-strategy": "retry",
                    "max-retries": "3",
                    "retry-wait-interval": "0.01",
                },
            )
    assert not [r for r in caplog.records if "retrying" in r.getMessage()]


def test_bad_react_arguments_are_clear_errors():
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn")
    with pytest.raises(ValueError, match="tool_calling must be one of"):
        ReActAgent(chat_model=setup, tool_calling="json")
    with pytest.raises(ValueError, match="max_iterations must be at least 1"):
        ReActAgent(chat_model=setup, max_iterations=0)
    with pytest.raises(TypeError, match="input_schema must be a pydantic model class"):
        ReActAgent(chat_model=setup, input_schema=dict)


def test_agent_name_and_description_are_in_the_plan():
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn")
    agent = ReActAgent(chat_model=setup, name="helper", description="Answers questions.")
    conn = ResourceDescriptor(clazz=ScriptedChatModelConnection, replies=[])
    plan = AgentPlan.from_agent(agent, resources={conn.clazz.resource_type(): {"conn": conn}})
    again = AgentPlan.model_validate_json(plan.model_dump_json())
    assert (again.name, again.description) == ("helper", "Answers questions.")


def _local_model_ready() -> bool:
    import importlib.util

    from flink_agents.integrations.chat_models.local_llama import model_store

    return (
        importlib.util.find_spec("llama_cpp") is not None
        and model_store.default_model_path().is_file()
    )


@pytest.mark.llm
@pytest.mark.skipif(
    not _local_model_ready(), reason="the local LLM is not installed (run `make model`)"
)
def test_text_react_with_the_real_local_model_does_one_step_arithmetic():
    from examples import text_react_agent

    agent = text_react_agent.build_agent("local")
    out = run(agent, [{"key": "q", "value": "What is 17 times 23? Use the multiply tool."}], {})
    (answer,) = out
    assert answer["tool_trace"][0]["tool"] == "multiply"
    assert answer["tool_trace"][0]["result"] in ("391", "391.0")
    assert "391" in answer["output"]


# -- chat history ----------------------------------------------------------------------------------
def recall(messages, tools):
    """Answers with the user questions it was sent (oldest first) and any summary."""
    if messages[0].content.startswith("Summarize the conversation"):
        return "S[" + messages[-1].content.replace("\n", "/") + "]"
    summary = [m.content for m in messages if m.content.startswith("Summary of")]
    users = [m.content for m in messages if m.role.value == "user"]
    return "|".join(summary + users)


def history_agent(history):
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn")
    agent = ReActAgent(chat_model=setup, chat_history=history)
    conn = ResourceDescriptor(clazz=ScriptedChatModelConnection, respond=recall, name="h")
    return agent, {"conn": conn}


def test_chat_history_keeps_a_keys_turns_and_drops_the_oldest():
    from flink_agents.api.chat_history import ChatHistory

    agent, resources = history_agent(ChatHistory(max_messages=4))
    inputs = [("a", "one"), ("b", "solo"), ("a", "two"), ("a", "three"), ("a", "four")]
    out = run(agent, [{"key": k, "value": v} for k, v in inputs], resources)
    assert out == ["one", "solo", "one|two", "one|two|three", "two|three|four"]


def test_chat_history_summarizes_the_oldest_turns():
    from flink_agents.api.chat_history import ChatHistory

    agent, resources = history_agent(ChatHistory(max_messages=3, overflow="summarize"))
    out = run(agent, [{"key": "a", "value": v} for v in ("one", "two", "three")], resources)
    assert out == [
        "one",
        "one|two",
        "Summary of the earlier conversation: S[user: one/assistant: one]|two|three",
    ]
    # Three answers and two summaries (after the second and the third turn).
    assert ScriptedChatModelConnection.call_counts["h"] == 5


def test_chat_history_bounded_by_tokens():
    from flink_agents.api.chat_history import ChatHistory, estimate_tokens

    agent, resources = history_agent(ChatHistory(max_messages=None, max_tokens=30))
    words = ["x" * 40, "y" * 40, "z" * 40]
    out = run(agent, [{"key": "a", "value": w} for w in words], resources)
    # Each turn is ~2 * (10 + 4) tokens: only the newest turn fits in 30.
    assert out == [words[0], f"{words[0]}|{words[1]}", f"{words[1]}|{words[2]}"]
    assert estimate_tokens([]) == 0


def test_chat_history_of_the_built_in_chat_action():
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.chat_history import ChatHistory
    from flink_agents.api.events.chat_event import ChatResponseEvent
    from flink_agents.api.events.event import InputEvent
    from tests.runtime.test_interceptors_hooks import run as run_pairs

    agent = Agent()
    agent.add_action("ask", [InputEvent], ask_with_history)
    agent.add_action("answer", [ChatResponseEvent], ba.answer)
    out = run_pairs(
        agent, [("k", "first"), ("j", "other"), ("k", "second")], ba.scripted_model(respond=recall)
    )
    assert out == ["first", "other", "first|second"]
    assert ChatHistory(max_messages=10).memory_path == "_chat_history.default"


def ask_with_history(event, ctx):
    from flink_agents.api.chat_history import ChatHistory
    from flink_agents.api.chat_message import ChatMessage
    from flink_agents.api.events.chat_event import ChatRequestEvent

    ctx.send_event(
        ChatRequestEvent(
            model="model",
            messages=[ChatMessage(content=str(event.input))],
            chat_history=ChatHistory(max_messages=10).model_dump(),
        )
    )


def test_bad_chat_history_settings_are_clear_errors():
    from pydantic import ValidationError

    from flink_agents.api.chat_history import ChatHistory

    with pytest.raises(ValidationError, match="needs max_messages or max_tokens"):
        ChatHistory(max_messages=None)
    with pytest.raises(ValidationError, match="greater than or equal to 2"):
        ChatHistory(max_messages=1)
    with pytest.raises(ValidationError, match="overflow"):
        ChatHistory(overflow="forget")
    setup = ResourceDescriptor(clazz=ScriptedChatModelSetup, connection="conn")
    with pytest.raises(TypeError, match="chat_history must be a ChatHistory"):
        ReActAgent(chat_model=setup, chat_history="lots")


def test_a_hooks_final_answer_ends_text_react_unparsed():
    agent, resources = react(["never used"], tool_calling="text")
    agent.add_hook("guard", "before_model", ba.before_model)  # stops on "stop-early"
    out = run(agent, [{"key": "q", "value": "stop-early"}], resources)
    assert out == ["answered by before_model"]
    assert ScriptedChatModelConnection.call_counts.get("react", 0) == 0
