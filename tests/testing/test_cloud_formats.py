"""The SigV4 verifier of the cloud stand-ins accepts what botocore signs with the secret and
rejects another secret or a changed body (so a Bedrock test that passes really was signed)."""

from __future__ import annotations

import pytest

from flink_agents.testing.servers import Reply, ScriptedServer
from flink_agents.testing.servers.cloud_formats import converse_reply, verify_sigv4

boto3 = pytest.importorskip("boto3")


def _signed_requests(secret: str) -> list:
    with ScriptedServer([Reply(converse_reply("ok"))]) as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="ap-south-1",
            endpoint_url=server.url,
            aws_access_key_id="AKIDSIG",
            aws_secret_access_key=secret,
        )
        client.converse(modelId="m:1", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    return server.requests


def test_a_request_signed_with_the_secret_verifies():
    (request,) = _signed_requests("the-right-secret")
    parts = verify_sigv4(request, "the-right-secret")
    assert parts["key"] == "AKIDSIG" and parts["region"] == "ap-south-1"
    assert parts["service"] == "bedrock" and request.path == "/model/m%3A1/converse"


def test_another_secret_or_a_changed_body_is_rejected():
    (request,) = _signed_requests("the-right-secret")
    with pytest.raises(AssertionError, match="signature does not match"):
        verify_sigv4(request, "another-secret")
    request.raw = request.raw.replace(b"hi", b"ho")
    with pytest.raises(AssertionError, match="signature does not match"):
        verify_sigv4(request, "the-right-secret")
    request.headers["authorization"] = "Bearer nope"
    with pytest.raises(AssertionError, match="not a SigV4"):
        verify_sigv4(request, "the-right-secret")
