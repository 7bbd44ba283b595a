"""Each cloud provider's secret (API key, AWS secret key, Vertex AI token) stays out of the
plan JSON, ``repr``, outputs, errors, logs (DEBUG included) and the event log, also when a
server echoes the credentials it received back in an error (a SigV4-signed request carries
only a signature, so Bedrock's server has nothing secret to echo)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from flink_agents.api.resource import ResourceDescriptor
from flink_agents.plan.agent_plan import AgentPlan
from flink_agents.testing.servers import Reply, ScriptedServer
from tests.integrations import agents
from tests.integrations.agents import CLOUD_PROVIDERS, FAST, ChatAgent, Provider
from tests.integrations.test_chat_models import _needs

SECRET = "super-secret-credential-4242"


@pytest.mark.parametrize(
    "p",
    [pytest.param(p, id=n, marks=_needs(p.requires)) for n, p in CLOUD_PROVIDERS.items()],
)
def test_secret_stays_out_of_plan_repr_outputs_logs_and_event_log(
    p: Provider, caplog: pytest.LogCaptureFixture, tmp_path: Path
):
    def respond(request):
        if "echo" in agents.request_text(p.messages_of(request.body)):
            # a misbehaving proxy that echoes the credentials it received
            sent = " ".join(request.headers.values())
            return Reply(p.error_body(f"overloaded, you sent {sent}"), status=503)
        return Reply(p.text_reply("authenticated"))

    agent = ChatAgent()
    with ScriptedServer(respond=respond) as server:
        base = {**p.base(server.url), p.secret_field: SECRET}
        agent.add_resource("conn", ResourceDescriptor(clazz=p.connection, **base, **FAST))
        agent.add_resource(
            "model", ResourceDescriptor(clazz=p.setup, connection="conn", **p.setup_args)
        )
        plan_json = AgentPlan.from_agent(agent).model_dump_json()
        caplog.set_level(logging.DEBUG)
        out = agents.run_agent(
            agent,
            [{"key": "a", "value": "hi"}, {"key": "b", "value": "echo"}],
            **{
                "error-handling-strategy": "ignore",
                "event-log.enabled": True,
                "baseLogDir": str(tmp_path),
            },
        )
        heard = [" ".join(q.headers.values()) for q in server.requests]
    assert SECRET not in plan_json
    by_key = {k: v for o in out for k, v in o.items()}
    assert by_key["a"]["content"] == "authenticated"
    assert "status=503" in by_key["b"]["error"]
    assert SECRET not in json.dumps(out)
    assert SECRET not in caplog.text and "overloaded" in caplog.text
    logs = "".join(f.read_text() for f in tmp_path.rglob("*") if f.is_file())
    assert logs and SECRET not in logs
    conn = p.connection(**base)
    assert SECRET not in repr(conn) and SECRET not in str(conn)
    assert SECRET not in conn.model_dump_json()
    if p.secret_field != "aws_secret_access_key":
        assert any(SECRET in h for h in heard)  # the credential reached the server
        assert "***" in by_key["b"]["error"]  # and was scrubbed from the echo
