"""YAML agents (``load_yaml`` / ``apply("name")``): what a file may declare, how files
combine, and every error naming the file, the line and the field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flink_agents.api.events.chat_event import ChatResponseEvent
from flink_agents.api.events.event import InputEvent
from flink_agents.api.execution_environment import AgentsExecutionEnvironment
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.errors import PlanValidationError, YamlError

F = "tests.api.yaml_functions"


def _write(tmp_path: Path, text: str, name: str = "agents.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _env() -> Any:
    return AgentsExecutionEnvironment.get_execution_environment()


def _error(tmp_path: Path, text: str, env: Any = None) -> YamlError:
    path = _write(tmp_path, text)
    with pytest.raises(YamlError) as info:
        (env or _env()).load_yaml(path)
    return info.value


def _run(env: Any, agent: str, values: list[Any]) -> list[Any]:
    out = env.from_list([{"key": i, "value": v} for i, v in enumerate(values)]).apply(agent)
    outputs = out.to_list()
    env.execute()
    return [next(iter(o.values())) for o in outputs]


# -- what a file declares ------------------------------------------------------------------


def test_agents_actions_prompts_tools_and_descriptors_load_and_run(tmp_path):
    path = _write(
        tmp_path,
        f"""
        agents:
          - name: echo_agent
            description: Echoes its input with the action's config.
            actions:
              - name: echo
                function: {F}:echo
                listen_to: [input]
                config: {{greeting: hello, times: 2}}
          - name: relay_agent
            actions:
              - name: relay
                function: {F}:relay
                trigger_conditions: [EventType.InputEvent]
              - name: finish
                function: {F}:finish
                trigger_conditions: ["'relayed'"]     # a quoted exact event type
            prompts:
              - {{name: short, text: "Say {{what}}"}}
              - name: chat
                messages:
                  - {{role: system, content: Be brief.}}
                  - {{content: "{{question}}"}}       # role defaults to user
            tools:
              - {{name: loud, function: "{F}:shout"}}
            chat_model_connections:
              - {{name: conn, clazz: ollama, base_url: "http://127.0.0.1:1", request_timeout: 5}}
            chat_model_setups:
              - name: model
                clazz: ollama
                connection: conn
                model: qwen3:8b
                prompt: chat
                tools: [loud]
            mcp_servers:
              - {{name: docs, clazz: mcp, endpoint: "http://127.0.0.1:1/mcp"}}
        """,
    )
    env = _env()
    env.load_yaml(path)
    assert _run(env, "echo_agent", ["hi"]) == [{"input": "hi", "greeting": "hello", "times": 2}]
    assert _run(env, "relay_agent", [7]) == [{"relayed": 7}]

    relay = env._agents["relay_agent"]
    assert relay.actions["relay"].events == (InputEvent.EVENT_TYPE,)
    assert relay.actions["finish"].events == ("relayed",)
    resources = relay.resources
    assert resources[ResourceType.PROMPT]["short"].format_string(what="hi") == "Say hi"
    chat = resources[ResourceType.PROMPT]["chat"].format_messages(question="why?")
    assert [(m.role.value, m.content) for m in chat] == [("system", "Be brief."), ("user", "why?")]
    tool = resources[ResourceType.TOOL]["loud"]
    assert tool.name == "loud" and tool.call(text="a") == "A"
    setup = resources[ResourceType.CHAT_MODEL]["model"]
    assert isinstance(setup, ResourceDescriptor)
    assert setup.class_path.endswith("ollama_chat_model.OllamaChatModelSetup")
    assert setup.arguments == {
        "connection": "conn",
        "model": "qwen3:8b",
        "prompt": "chat",
        "tools": ["loud"],
    }
    assert resources[ResourceType.MCP_SERVER]["docs"].url == "http://127.0.0.1:1/mcp"


def test_shared_resources_and_actions_across_files_and_agents(tmp_path):
    """A topology file and an infrastructure file (loaded after it), as upstream suggests;
    a shared action of one file is named by agents of that file and of later files."""
    topology = _write(
        tmp_path,
        f"""
        agents:
          - name: first
            actions: [shared_echo]
            chat_model_setups:
              - {{name: model, clazz: ollama, connection: llm, model: m}}
        actions:
          - name: shared_echo
            function: {F}:echo
            listen_to: [input]
            config: {{origin: shared}}
        """,
        "topology.yaml",
    )
    infra = _write(
        tmp_path,
        """
        chat_model_connections:
          - {name: llm, clazz: ollama, base_url: "http://127.0.0.1:1"}
        """,
        "infra.yaml",
    )
    later = _write(tmp_path, "agents:\n  - name: second\n    actions: [shared_echo]\n", "b.yaml")
    env = _env()
    env.load_yaml([topology, infra])
    env.load_yaml(later)
    assert set(env.resources[ResourceType.CHAT_MODEL_CONNECTION]) == {"llm"}
    assert _run(env, "first", [1]) == [{"input": 1, "origin": "shared"}]
    assert _run(env, "second", [2]) == [{"input": 2, "origin": "shared"}]


def test_yaml_merge_keys_and_anchors_are_allowed(tmp_path):
    # Unknown top-level keys are errors, so anchors live in the entries themselves; a key
    # given again after `<<:` overrides the merged one (not a duplicate key).
    path = _write(
        tmp_path,
        f"""
        actions:
          - &echo {{name: shared, function: "{F}:echo", listen_to: [input], config: {{a: 1}}}}
        agents:
          - name: merged
            actions:
              - <<: *echo
                name: own
                config: {{a: 2}}
        """,
    )
    env = _env()
    env.load_yaml(path)
    assert _run(env, "merged", ["x"]) == [{"input": "x", "a": 2}]


def test_json_schema_export():
    from flink_agents.api.yaml.specs import export

    schema = json.loads(export())
    assert {"agents", "actions", "chat_model_setups", "mcp_servers"} <= set(schema["properties"])
    action = schema["$defs"]["ActionSpec"]
    assert action["additionalProperties"] is False
    assert {"listen_to", "trigger_conditions", "function", "config"} <= set(action["properties"])


# -- errors in one file: file, line, field -------------------------------------------------

AGENT = f"""
agents:
  - name: a
    actions:
      - name: act
        function: {F}:echo
        listen_to: [input]
"""

CASES = [
    # (id, file text, line, field, part of the message)
    ("not a mapping", "- a\n- b\n", 1, None, "must be a mapping with 'agents:'"),
    ("unknown top key", "agent:\n  - name: a\n", 1, "agent", "did you mean 'agents'?"),
    (
        "unknown agent key",
        "agents:\n  - name: a\n    action: []\n",
        3,
        "agents[0].action",
        "unknown key 'action'; did you mean 'actions'?",
    ),
    (
        "listen_to typo",
        AGENT.replace("listen_to", "lisen_to"),
        6,
        "agents[0].actions[0].lisen_to",
        "did you mean 'listen_to'?",
    ),
    (
        "missing name",
        AGENT.replace("      - name: act\n        function", "      - function"),
        4,
        "agents[0].actions[0].name",
        "'name' is required",
    ),
    (
        "no triggers",
        AGENT.replace("        listen_to: [input]\n", ""),
        4,
        "agents[0].actions[0]",
        "an action needs 'listen_to' (or 'trigger_conditions')",
    ),
    (
        "both trigger keys",
        AGENT + "        trigger_conditions: [input]\n",
        4,
        "agents[0].actions[0]",
        "not both",
    ),
    (
        "empty triggers",
        AGENT.replace("[input]", "[]"),
        4,
        "agents[0].actions[0]",
        "'listen_to' must list at least one event type",
    ),
    (
        "blank trigger",
        AGENT.replace("[input]", "[' ']"),
        6,
        "agents[0].actions[0].listen_to[0]",
        "should match pattern",
    ),
    (
        "bad language",
        AGENT + "        type: rust\n",
        7,
        "agents[0].actions[0].type",
        "Input should be 'python' or 'java'",
    ),
    (
        "prompt text and messages",
        AGENT
        + "    prompts:\n      - name: p\n        text: t\n        messages: [{content: c}]\n",
        8,
        "agents[0].prompts[0]",
        "exactly one non-empty 'text' or 'messages'",
    ),
    (
        "prompt role",
        AGENT + "    prompts:\n      - name: p\n        messages: [{role: robot, content: c}]\n",
        9,
        "agents[0].prompts[0].messages[0].role",
        "'system', 'user', 'assistant' or 'tool'",
    ),
    (
        "action not a mapping",
        AGENT + "      - 42\n",
        7,
        "agents[0].actions[1]",
        "an action is a mapping (name, function, listen_to) or the name of a shared action",
    ),
    (
        "key twice",
        AGENT.replace("      - name: act\n", "      - name: act\n        name: again\n"),
        5,
        "agents[0].actions[0].name",
        "key 'name' is given twice (also on line 4)",
    ),
    (
        "class alias typo",
        AGENT + "    chat_model_connections:\n      - {name: c, clazz: olama}\n",
        8,
        "agents[0].chat_model_connections[0].clazz",
        "unknown chat_model_connections alias 'olama' (aliases: ['anthropic', 'azure_openai', "
        "'bedrock', 'gemini', 'ollama', 'openai', 'tongyi', 'vllm'], or write a dotted class "
        "path); did you mean 'ollama'?",
    ),
    (
        "upstream alias we lack",
        AGENT + "    chat_model_setups:\n      - {name: s, clazz: watsonx, connection: c}\n",
        8,
        "agents[0].chat_model_setups[0].clazz",
        "'watsonx' is an Apache Flink Agents integration flink-agents does not have",
    ),
    (
        "class not importable",
        AGENT + "    vector_stores:\n      - name: v\n        clazz: my_pkg.stores.Store\n",
        9,
        "agents[0].vector_stores[0].clazz",
        "cannot import class 'my_pkg.stores.Store': no module named 'my_pkg'",
    ),
    (
        "class of another section",
        AGENT
        + "    chat_model_connections:\n      - name: c\n        clazz: "
        + "flink_agents.integrations.chat_models.ollama_chat_model.OllamaChatModelSetup\n",
        9,
        "agents[0].chat_model_connections[0].clazz",
        "OllamaChatModelSetup is a chat model setup, not a chat model connection: declare it "
        "under 'chat_model_setups'",
    ),
    (
        "unknown argument",
        AGENT + "    chat_model_connections:\n      - name: c\n        clazz: ollama\n"
        "        request_timout: 5\n",
        10,
        "agents[0].chat_model_connections[0].request_timout",
        "unknown argument 'request_timout' of OllamaChatModelConnection; did you mean "
        "'request_timeout'?",
    ),
    (
        "argument of the wrong type",
        AGENT + "    chat_model_setups:\n      - name: s\n        clazz: ollama\n"
        "        connection: c\n        model: m\n        temperature: hot\n",
        12,
        "agents[0].chat_model_setups[0].temperature",
        "Input should be a valid number",
    ),
    (
        "setup without model",
        AGENT
        + "    chat_model_setups:\n      - name: s\n        clazz: ollama\n        connection: c\n",
        8,
        "agents[0].chat_model_setups[0].model",
        "'model' is required by OllamaChatModelSetup",
    ),
    (
        "MCP server without an endpoint",
        AGENT + "    mcp_servers:\n      - {name: m, clazz: mcp}\n",
        8,
        "agents[0].mcp_servers[0]",
        "MCPServer needs exactly one of command= (stdio) or url= (HTTP)",
    ),
    (
        "MCP server argument upstream has",
        AGENT + "    mcp_servers:\n      - {name: m, clazz: mcp, endpoint: 'http://h/mcp', "
        "sse_read_timeout: 5}\n",
        8,
        "agents[0].mcp_servers[0].sse_read_timeout",
        "unknown argument 'sse_read_timeout' of MCPServer",
    ),
    (
        "function without colon",
        AGENT.replace(f"{F}:echo", f"{F}.echo"),
        5,
        "agents[0].actions[0].function",
        f"did you mean '{F}:echo'?",
    ),
    (
        "function module missing",
        AGENT.replace(f"{F}:echo", "my_pkg.actions:echo"),
        5,
        "agents[0].actions[0].function",
        "cannot import 'my_pkg.actions': no module named 'my_pkg'",
    ),
    (
        "function name typo",
        AGENT.replace(f"{F}:echo", f"{F}:ecko"),
        5,
        "agents[0].actions[0].function",
        f"'{F}' has no attribute 'ecko'; did you mean 'echo'?",
    ),
    (
        "not a function",
        AGENT.replace(f"{F}:echo", f"{F}:NOT_A_FUNCTION"),
        5,
        "agents[0].actions[0].function",
        "is not a function",
    ),
    (
        "action signature",
        AGENT.replace(f"{F}:echo", f"{F}:one_argument"),
        5,
        "agents[0].actions[0].function",
        "an action takes two arguments (event, ctx); this one takes ['event']",
    ),
    (
        "function missing",
        AGENT.replace(f"        function: {F}:echo\n", ""),
        4,
        "agents[0].actions[0].function",
        "'function' is required",
    ),
    (
        "agent twice",
        AGENT + "  - name: a\n",
        7,
        "agents[1].name",
        "agent 'a' is declared twice",
    ),
    (
        "tool twice",
        AGENT + f"    tools:\n      - {{name: t, function: '{F}:shout'}}\n"
        f"      - {{name: t, function: '{F}:shout'}}\n",
        9,
        "agents[0].tools[1].name",
        "tool 't' is declared twice (agent 'a')",
    ),
    (
        "unknown shared action",
        AGENT + "      - shared_ech\n",
        7,
        "agents[0].actions[1]",
        "'shared_ech' names no shared action",
    ),
    (
        "condition expression",
        AGENT.replace("listen_to: [input]", "trigger_conditions: ['type == \"x\" &&']"),
        6,
        "agents[0].actions[0].trigger_conditions[0]",
        "expected an expression, found the end (column 15)",
    ),
    (
        "event alias typo",
        AGENT.replace("[input]", "[input, chat_respons]"),
        6,
        "agents[0].actions[0].listen_to[1]",
        "'chat_respons' is not an event alias; did you mean 'chat_response'?",
    ),
    (
        "action config not JSON",
        AGENT + "        config: {since: 2024-01-01}\n",
        7,
        "agents[0].actions[0].config",
        "action config must hold JSON values only",
    ),
    (
        "skills",
        AGENT + "    skills:\n      - {name: s, paths: [./skills]}\n",
        7,
        "agents[0].skills",
        "skills in YAML agent files are not supported yet",
    ),
    (
        "java tool",
        AGENT + "    tools:\n      - name: add\n        type: java\n"
        "        function: com.example.Tools:add\n",
        9,
        "agents[0].tools[0].type",
        "Java function tools (a static method with parameter_types) are not supported",
    ),
    (
        "parameter types on a python tool",
        AGENT + f"    tools:\n      - name: t\n        function: {F}:shout\n"
        "        parameter_types: [java.lang.String]\n",
        10,
        "agents[0].tools[0].parameter_types",
        "parameter_types is for Java tools only",
    ),
    (
        "injected args",
        AGENT + f"    tools:\n      - name: t\n        function: {F}:shout\n"
        "        injected_args: {tenant: {source: config, key: tenant}}\n",
        10,
        "agents[0].tools[0].injected_args",
        "injected_args (tool parameter injection) is not supported",
    ),
    ("java action", AGENT + "        type: java\n", 7, "agents[0].actions[0].type", "Java actions"),
    (
        "java alias",
        AGENT + "    chat_model_connections:\n      - {name: c, clazz: ollama, type: java}\n",
        8,
        "agents[0].chat_model_connections[0].clazz",
        "names an Apache Flink Agents Java integration",
    ),
    (
        "java mcp server",
        AGENT + "    mcp_servers:\n      - {name: v, clazz: com.example.Server, type: java}\n",
        8,
        "agents[0].mcp_servers[0].type",
        "type: java is not supported for mcp_servers",
    ),
]


@pytest.mark.parametrize(
    ("text", "line", "field", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_an_error_names_the_file_line_and_field(tmp_path, text, line, field, message):
    err = _error(tmp_path, text)
    assert len(err.problems) == 1, str(err)
    assert (err.path, err.line, err.field) == (str(tmp_path / "agents.yaml"), line, field), str(err)
    assert message in str(err)
    prefix = f"{tmp_path / 'agents.yaml'}:{line}:"
    assert str(err).startswith(prefix), str(err)


def test_not_yaml_empty_and_missing_files(tmp_path):
    err = _error(tmp_path, "agents:\n  - name: a\n    actions: [x\n")
    assert (err.line, err.column) == (4, 1) and "not valid YAML" in str(err)
    assert err.path == str(tmp_path / "agents.yaml")
    err = _error(tmp_path, "# nothing\n")
    assert (
        str(err) == f"{tmp_path / 'agents.yaml'}: the file is empty: declare agents under 'agents:'"
    )
    with pytest.raises(YamlError, match=r"nope.yaml: cannot read the file: No such file"):
        _env().load_yaml(tmp_path / "nope.yaml")
    with pytest.raises(TypeError, match="load_yaml takes"):
        _env().load_yaml(42)


def test_every_problem_of_a_file_is_reported_at_once(tmp_path):
    """Every problem found without importing anything first (nothing is imported then),
    then, once those are fixed, every problem the imports find."""
    text = f"""
        agents:
          - name: a
            actions:
              - {{name: x, function: "{F}:ecko", listen_to: [input]}}
              - {{name: y, function: "{F}:echo", listen_to: [chat_respons]}}
              - {{name: z, function: "{F}.echo", listen_to: [input]}}
            chat_model_setups:
              - {{name: s, clazz: ollama, connection: c}}
        """
    err = _error(tmp_path, text)
    assert [(p.line, p.field) for p in err.problems] == [
        (5, "agents[0].actions[1].listen_to[0]"),
        (6, "agents[0].actions[2].function"),
    ]
    assert str(err).startswith(f"2 problems in {tmp_path / 'agents.yaml'}:\n  ")
    fixed = text.replace("chat_respons", "chat_response").replace(f"{F}.echo", f"{F}:echo")
    err = _error(tmp_path, fixed)
    assert [(p.line, p.field) for p in err.problems] == [
        (4, "agents[0].actions[0].function"),
        (8, "agents[0].chat_model_setups[0].model"),
    ]


def test_a_custom_event_type_close_to_an_alias_is_accepted_when_its_class_exists(tmp_path):
    from tests.api.yaml_functions import Inputs

    path = _write(tmp_path, AGENT.replace("[input]", "[inputs]"))
    env = _env()
    env.load_yaml(path)
    assert env._agents["a"].actions["act"].events == (Inputs.EVENT_TYPE,)
    err = _error(tmp_path, AGENT.replace("[input]", "[chat_responses]"))
    assert "did you mean 'chat_response'?" in str(err)
    assert "write \"'chat_responses'\" for an event type of your own" in str(err)
    path = _write(tmp_path, AGENT.replace("[input]", "[\"'chat_responses'\", chat_response]"))
    env = _env()
    env.load_yaml(path)
    assert env._agents["a"].actions["act"].events == (
        "chat_responses",
        ChatResponseEvent.EVENT_TYPE,
    )


# -- names across files and the environment ------------------------------------------------


def test_names_taken_by_earlier_files_or_add_resource(tmp_path):
    shared = """
    chat_model_connections:
      - {name: llm, clazz: ollama}
    actions:
      - {name: shared, function: "tests.api.yaml_functions:echo", listen_to: [input]}
    """
    env = _env()
    env.load_yaml(_write(tmp_path, AGENT, "first.yaml"))
    err = _error(tmp_path, AGENT, env)
    assert (err.line, err.field) == (2, "agents[0].name")
    assert "an agent named 'a' is already on the environment" in str(err)

    env.load_yaml(_write(tmp_path, shared, "shared.yaml"))
    err = _error(tmp_path, shared, env)
    assert [(p.line, p.field) for p in err.problems] == [
        (2, "chat_model_connections[0].name"),
        (4, "actions[0].name"),
    ]
    assert "a shared chat model connection named 'llm' is already on the environment" in str(err)
    assert (
        f"a shared action named 'shared' was loaded before from {tmp_path / 'shared.yaml'}"
        in str(err)
    )

    other = _env()
    other.add_resource("llm", ResourceType.CHAT_MODEL_CONNECTION, ResourceDescriptor(clazz="x.Y"))
    err = _error(tmp_path, shared, other)
    assert err.field == "chat_model_connections[0].name"
    assert other._agents == {} and "shared" not in other._yaml_registry.shared_actions


def test_a_missing_resource_is_reported_with_its_line_when_the_agent_is_applied(tmp_path):
    path = _write(
        tmp_path,
        AGENT
        + f"""
    tools:
      - {{name: loud, function: "{F}:shout"}}
    chat_model_setups:
      - name: s
        clazz: ollama
        model: m
        connection: olama_server
        tools: [loud, quiet]
chat_model_setups:
  - {{name: shared_setup, clazz: ollama, model: m, connection: ollama_server}}
""",
    )
    env = _env()
    env.load_yaml(path)  # another file, or add_resource, may still declare them
    with pytest.raises(YamlError) as info:
        env.from_list([]).apply("a")
    assert [(p.line, p.field) for p in info.value.problems] == [
        (14, "agents[0].chat_model_setups[0].connection"),
        (15, "agents[0].chat_model_setups[0].tools[1]"),
        (17, "chat_model_setups[0].connection"),
    ]
    assert (
        "chat model setup 's' refers to chat model connection 'olama_server', which neither "
        "agent 'a' nor the environment (shared sections, add_resource) declares "
        "(declared: none)"
    ) in str(info.value)
    assert "refers to tool 'quiet'" in str(info.value) and "(declared: ['loud'])" in str(info.value)
    # Added later, it resolves the setups (the first one's typo stays an error).
    env.add_resource(
        "ollama_server",
        ResourceType.CHAT_MODEL_CONNECTION,
        ResourceDescriptor(
            clazz="flink_agents.integrations.chat_models.ollama_chat_model."
            "OllamaChatModelConnection"
        ),
    )
    with pytest.raises(YamlError) as info:
        env.from_list([]).apply("a")
    assert [p.field for p in info.value.problems] == [
        "agents[0].chat_model_setups[0].connection",
        "agents[0].chat_model_setups[0].tools[1]",
    ]
    assert "did you mean 'ollama_server'?" in str(info.value)


def test_applying_an_unknown_name_or_a_wrong_type(tmp_path):
    env = _env()
    env.load_yaml(_write(tmp_path, AGENT.replace("name: a", "name: review_agent")))
    with pytest.raises(
        PlanValidationError, match="no agent named 'review_agnet'.*did you mean 'review_agent'"
    ):
        env.from_list([]).apply("review_agnet")
    with pytest.raises(TypeError, match="apply\\(\\) takes an Agent or an agent name"):
        env.from_list([]).apply(42)


def test_a_python_agent_applied_with_broken_shared_yaml_resources(tmp_path):
    """Shared resources join every agent's plan, also an agent written in Python."""
    from tests.runtime.agents import CounterAgent

    env = _env()
    env.load_yaml(
        _write(
            tmp_path,
            "chat_model_setups:\n  - {name: s, clazz: ollama, model: m, connection: nowhere}\n",
        )
    )
    with pytest.raises(YamlError) as info:
        env.from_list([]).apply(CounterAgent())
    assert (info.value.line, info.value.field) == (2, "chat_model_setups[0].connection")
    assert "neither the agent nor the environment" in str(info.value)


def test_trigger_condition_expressions_in_yaml(tmp_path):
    """Upstream main's YAML ``trigger_conditions``: exact types and CEL expressions, ORed."""
    path = _write(
        tmp_path,
        f"""
        agents:
          - name: conditional
            actions:
              - name: relay
                function: {F}:relay
                trigger_conditions: [input]
              - name: finish
                function: {F}:finish
                trigger_conditions:
                  - 'type == "relayed" && value > 5'
                  - 'type == "relayed" && value == 0'
        """,
    )
    env = _env()
    env.load_yaml(path)
    assert _run(env, "conditional", [9, 3, 0]) == [{"relayed": 9}, {"relayed": 0}]
