"""A secret, however it is spelled, appears in none of the places we show or keep.

A table of spellings (secret names in several spellings, URL credentials, a secret query
parameter, ``SecretStr``) against the places: the plan JSON, the event log, the trace page,
our log records, exception messages (and their causes), SQL ``SHOW`` output, reprs and the
durable records a host keeps in keyed state. Each spelling puts its secret into a
resource's arguments, the agent configuration and an action's configuration, and the
action puts it into an event, a failing durable call and its own error.
"""

from __future__ import annotations

import logging
import pickle
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from flink_agents.api.agents.agent import Agent
from flink_agents.api.events.event import Event, InputEvent, OutputEvent
from flink_agents.api.resource import Resource, ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.errors import RuntimeFailure
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.runtime.local.runner import LocalRunner
from flink_agents.runtime.observability.trace import load_runs, render_html, render_text


@dataclass(frozen=True)
class Spelling:
    """How a secret is given: ``name`` (a secret name: the value is the secret), ``url``
    (the value is a URL holding it) or ``secret_str``."""

    id: str
    kind: str
    name: str = "api_key"
    template: str = "{}"


SPELLINGS = [
    Spelling("snake", "name", "api_key"),
    Spelling("hyphen", "name", "api-key"),
    Spelling("header", "name", "X-Api-Key"),
    Spelling("dotted", "name", "api.key"),
    Spelling("camel", "name", "apiKey"),
    Spelling("token", "name", "webhook.token"),
    Spelling("authorization", "name", "Authorization", "Bearer {}"),
    Spelling("url-credentials", "url", "endpoint", "http://user:{}@db.example:5432/x"),
    Spelling("query-token", "url", "endpoint", "https://hooks.example/in?token={}&q=1"),
    Spelling("secret-str", "secret_str", "api_key"),
]


class SecretHolder(Resource):
    """A resource holding what the spelling gives (like a connection's headers or URL)."""

    headers: dict[str, Any] = {}
    endpoint: str = ""
    api_key: SecretStr | None = None

    @classmethod
    def resource_type(cls) -> ResourceType:
        return ResourceType.CHAT_MODEL_CONNECTION


def _value(spelling: Spelling, secret: str) -> Any:
    text = spelling.template.format(secret)
    return SecretStr(text) if spelling.kind == "secret_str" else text


def _reads_secret(ctx: RunnerContext, spelling_id: str) -> str:
    """What the action finds of the secret (restored from the side table)."""
    spelling = next(s for s in SPELLINGS if s.id == spelling_id)
    raw = ctx.action_config[spelling.name]
    config = ctx.config.get_str(f"webhook.{spelling.name}")
    holder = ctx.get_resource("holder", ResourceType.CHAT_MODEL_CONNECTION)
    given = {
        "name": holder.headers.get(spelling.name),
        "url": holder.endpoint,
        "secret_str": holder.api_key.get_secret_value() if holder.api_key else None,
    }[spelling.kind]
    values = [v.get_secret_value() if isinstance(v, SecretStr) else v for v in (raw, config)]
    assert values[0] == values[1] == given, (values, given)
    return str(given)


def leaky(event: Event, ctx: RunnerContext) -> None:
    text = _reads_secret(ctx, ctx.action_config["spelling"])
    spelling = ctx.action_config["spelling"]
    name = next(s.name for s in SPELLINGS if s.id == spelling)
    # Into an event (the event log, the trace), as a value and inside text.
    ctx.send_event(Event(type="audit", attributes={name: text, "note": f"called {text}"}))
    ctx.send_event(OutputEvent(output="done"))


def fails(event: Event, ctx: RunnerContext) -> None:
    text = str(event.get_attr("note")).removeprefix("called ")

    def denied() -> None:
        raise PermissionError(f"denied for {text}")

    try:  # a failed durable call is kept (keyed state on Flink)
        ctx.durable_execute(denied)
    except PermissionError:
        pass
    logging.getLogger("flink_agents.test.leaky").warning("about to fail with %s", text)
    raise ValueError(f"upstream rejected {text}")


def _agent(spelling: Spelling, secret: str) -> tuple[Agent, dict[str, Any]]:
    value = _value(spelling, secret)
    arguments: dict[str, Any] = {
        "name": {"headers": {spelling.name: value}},
        "url": {"endpoint": value},
        "secret_str": {"api_key": value},
    }[spelling.kind]
    agent = Agent()
    agent.add_resource("holder", ResourceDescriptor(clazz=SecretHolder, **arguments))
    agent.add_action(
        "leaky", [InputEvent], leaky, **{spelling.name: value, "spelling": spelling.id}
    )
    agent.add_action("fails", ["audit"], fails)
    config = {f"webhook.{spelling.name}": value}
    return agent, config


def _secret(spelling: Spelling) -> str:
    return f"sk-{spelling.id}-4f8a2c"


def _strip(secret: str, spelling: Spelling) -> str:
    # What must never appear: the secret itself (a URL's host or a scheme may stay).
    return secret


@pytest.mark.parametrize("spelling", SPELLINGS, ids=[s.id for s in SPELLINGS])
def test_secret_appears_nowhere(
    spelling: Spelling, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = _secret(spelling)
    agent, config = _agent(spelling, secret)
    log_dir = tmp_path / "events"
    config.update(
        {
            "event-log.enabled": True,
            "event-log.writer": "thread",
            "event-log.level": "VERBOSE",
            "baseLogDir": str(log_dir),
            "error-handling-strategy": "ignore",
        }
    )
    plan = AgentPlan.from_agent(agent, config)
    places: dict[str, str] = {"plan JSON": plan.model_dump_json(), "plan repr": repr(plan)}

    with caplog.at_level(logging.INFO):
        with LocalRunner(plan) as runner:
            results = runner.run([("k", {"q": 1})])
            holder = runner.runner.resources.get("holder", ResourceType.CHAT_MODEL_CONNECTION)
            places["resource repr"] = repr(holder)
    assert results[0].outputs == ["done"]  # the action ran with the secret restored
    assert len(results[0].errors) == 1
    places["error event"] = results[0].errors[0].model_dump_json()
    places["durable records (keyed state)"] = repr(pickle.dumps(results[0].durable_records))
    places["durable records, unpickled"] = "".join(
        str(r.error) for r in results[0].durable_records.values()
    )
    formatter = logging.Formatter("%(message)s")
    places["logs"] = caplog.text + "".join(formatter.format(r) for r in caplog.records)
    places["event log"] = "".join(p.read_text() for p in sorted(log_dir.iterdir()))
    runs = load_runs(str(log_dir))
    places["trace text"] = render_text(runs)
    places["trace HTML"] = render_html(runs)

    # Under FAIL the error is raised: its message, its cause and the traceback.
    fail_plan = AgentPlan.from_agent(agent, {**config, "error-handling-strategy": "fail"})
    with LocalRunner(fail_plan) as runner, pytest.raises(RuntimeFailure) as raised:
        runner.run([("k", {"q": 1})])
    places["exception"] = str(raised.value) + repr(raised.value)
    places["traceback"] = "".join(traceback.format_exception(raised.value))
    assert "upstream rejected" in places["exception"]

    for place, text in places.items():
        assert secret not in text, f"the secret shows in the {place}"
    assert "***" in places["event log"] and "***" in places["exception"]


SQL_SPELLINGS = [
    ("'api-key' = '{}'", "openai"),
    ("'endpoint' = 'http://user:{}@llm.example/v1'", "openai"),
    ("'endpoint' = 'https://llm.example/v1?api_key={}'", "openai"),
]


class _NoFlinkHost:
    """The executor's host for statements that never reach Flink (CREATE/SHOW/DESC of a
    connection): only the current catalog and database are asked for."""

    def current(self) -> tuple[str, str]:
        return "default_catalog", "default_database"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the statement asked the Flink host for {name}")


@pytest.mark.parametrize(("option", "kind"), SQL_SPELLINGS)
def test_sql_show_output_masks_secrets(option: str, kind: str) -> None:
    from flink_agents.sql.catalog import AgentCatalog
    from flink_agents.sql.executor import StatementExecutor
    from flink_agents.sql.parser import parse_statement

    secret = "sk-sql-9c1d7e"
    executor = StatementExecutor(AgentCatalog(), _NoFlinkHost())  # type: ignore[arg-type]

    def run(sql: str) -> str:
        statement = parse_statement(sql)
        assert statement is not None
        return repr(executor.execute(statement).rows)

    run(f"CREATE CONNECTION c WITH ('type' = '{kind}', {option.format(secret)})")
    shown = run("SHOW CREATE CONNECTION c") + run("DESC CONNECTION EXTENDED c")
    assert secret not in shown and "***" in shown


def test_yaml_action_config_secrets_stay_out_of_the_plan(tmp_path: Path) -> None:
    """``config:`` of a YAML action goes through the same redaction."""
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    secret = "sk-yaml-config-3391"
    path = tmp_path / "agents.yaml"
    path.write_text(
        "agents:\n"
        "  - name: a\n"
        "    actions:\n"
        "      - name: x\n"
        "        function: 'tests.api.yaml_functions:echo'\n"
        "        listen_to: [input]\n"
        f"        config: {{webhook.token: {secret}, url: 'http://u:{secret}@h'}}\n"
    )
    env = AgentsExecutionEnvironment.get_execution_environment()
    env.load_yaml(path)
    plan = AgentPlan.from_agent(env._agent_to_apply("a"))
    assert secret not in plan.model_dump_json()
    assert plan.actions["x"].runtime_config["webhook.token"] == secret  # restored for ctx
