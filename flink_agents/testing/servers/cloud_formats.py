"""Wire formats of the cloud providers, to script a :class:`ScriptedServer` as a stand-in
for OpenAI's Responses API, Azure OpenAI, DashScope (Tongyi), Amazon Bedrock (Converse) and
Google Gemini / Vertex AI: reply bodies, each provider's error and throttling answers, and
:func:`verify_sigv4`, which checks that a request was signed (AWS Signature Version 4) with
the expected secret, recomputing the signature as AWS does.

Example: a Bedrock stand-in answering a tool call, then text; every request must be signed::

    from flink_agents.testing.servers import ScriptedServer, Reply
    from flink_agents.testing.servers.cloud_formats import converse_reply, verify_sigv4

    def respond(request):
        verify_sigv4(request, "my-test-secret")
        if "toolResult" in request.raw.decode():
            return Reply(converse_reply("The sum is 3."))
        return Reply(converse_reply(None, [("tu_1", "add", {"a": 1, "b": 2})]))

    with ScriptedServer(respond=respond) as server:
        conn = BedrockChatModelConnection(endpoint_url=server.url, region="us-east-1",
                                          aws_access_key_id="AKIDTEST",
                                          aws_secret_access_key="my-test-secret")

Paths the SDKs use: Azure ``/openai/deployments/{deployment}/chat/completions?api-version=``
(and ``/embeddings``), OpenAI ``/v1/responses``, DashScope
``/api/v1/services/aigc/text-generation/generation`` and
``/api/v1/services/embeddings/text-embedding/text-embedding``, Bedrock
``/model/{model id}/converse`` and ``/model/{model id}/invoke``, Gemini
``/{version}/models/{model}:generateContent`` / ``:batchEmbedContents``, Vertex AI
``/{version}/projects/{project}/locations/{location}/publishers/google/models/{model}:
generateContent`` / ``:predict``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import urllib.parse
from typing import Any

from flink_agents.testing.servers._scripted import Reply, Request

__all__ = [
    "bedrock_error",
    "bedrock_error_reply",
    "bedrock_throttle",
    "converse_reply",
    "converse_results",
    "dashscope_error",
    "dashscope_reply",
    "dashscope_results",
    "dashscope_throttle",
    "gemini_error",
    "gemini_reply",
    "gemini_results",
    "gemini_throttle",
    "openai_error",
    "openai_throttle",
    "responses_reply",
    "responses_results",
    "verify_sigv4",
]

# --- OpenAI Responses API ---------------------------------------------------------------


def responses_reply(
    text: str | None = None,
    calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    model: str = "gpt-test",
    reasoning: str | None = None,
    input_tokens: int = 11,
    output_tokens: int = 7,
) -> dict[str, Any]:
    """A ``POST /v1/responses`` reply; ``calls`` are ``(call id, name, arguments)``."""
    output: list[dict[str, Any]] = []
    if reasoning is not None:
        output.append(
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": reasoning}],
            }
        )
    if text is not None:
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for i, (cid, name, args) in enumerate(calls or []):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{i}",
                "call_id": cid,
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def openai_error(message: str, *, code: str | None = None, kind: str = "server_error") -> Any:
    """An OpenAI / Azure OpenAI error body."""
    return {"error": {"message": message, "type": kind, "code": code}}


def openai_throttle() -> Reply:
    """OpenAI's (and Azure's) rate-limit answer."""
    return Reply(
        openai_error("Rate limit reached for requests", code="rate_limit_exceeded"),
        status=429,
        headers={"retry-after-ms": "10"},
    )


def responses_results(body: Any) -> list[tuple[str, str]]:
    """Tool results a Responses request sends back: ``[(call id, output)]``."""
    return [
        (i["call_id"], i["output"])
        for i in body.get("input", [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]


# --- DashScope (Tongyi) -------------------------------------------------------------------


def dashscope_reply(
    content: str = "",
    calls: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    reasoning: str | None = None,
    input_tokens: int = 12,
    output_tokens: int = 5,
) -> dict[str, Any]:
    """A DashScope text-generation reply (``result_format=message``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = [
            {
                "id": cid,
                "type": "function",
                "index": i,
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (cid, name, args) in enumerate(calls)
        ]
    return {
        "request_id": "req-1",
        "output": {
            "choices": [{"finish_reason": "tool_calls" if calls else "stop", "message": message}]
        },
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        },
    }


def dashscope_error(message: str, code: str = "InternalError") -> dict[str, Any]:
    """A DashScope error body."""
    return {"request_id": "req-err", "code": code, "message": message}


def dashscope_throttle() -> Reply:
    """DashScope's rate-limit answer."""
    return Reply(
        dashscope_error(
            "Requests rate limit exceeded, please try again later.", "Throttling.RateQuota"
        ),
        status=429,
    )


def dashscope_results(body: Any) -> list[tuple[str, str]]:
    """Tool results a DashScope request sends back: ``[(tool_call_id, content)]``."""
    return [
        (m["tool_call_id"], m["content"]) for m in body["input"]["messages"] if m["role"] == "tool"
    ]


# --- Amazon Bedrock (Converse) ------------------------------------------------------------


def converse_reply(
    text: str | None = None,
    uses: list[tuple[str, str, dict[str, Any]]] | None = None,
    *,
    input_tokens: int = 21,
    output_tokens: int = 8,
) -> dict[str, Any]:
    """A Converse reply; ``uses`` are ``(toolUseId, name, input)``."""
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"text": text})
    for cid, name, args in uses or []:
        content.append({"toolUse": {"toolUseId": cid, "name": name, "input": args}})
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if uses else "end_turn",
        "usage": {
            "inputTokens": input_tokens,
            "outputTokens": output_tokens,
            "totalTokens": input_tokens + output_tokens,
        },
        "metrics": {"latencyMs": 12},
    }


def bedrock_error(message: str) -> dict[str, Any]:
    """A Bedrock error body (the code travels in ``x-amzn-ErrorType``, see bedrock_reply)."""
    return {"message": message}


_BEDROCK_CODES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def bedrock_error_reply(message: str, status: int, code: str | None = None) -> Reply:
    """A Bedrock error answer with its ``x-amzn-ErrorType`` header."""
    code = code or _BEDROCK_CODES.get(status, "InternalServerException")
    return Reply(
        bedrock_error(message),
        status=status,
        headers={
            "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        },
    )


def bedrock_throttle() -> Reply:
    """Bedrock's throttling answer."""
    return bedrock_error_reply("Too many requests, please wait before trying again.", 429)


def converse_results(body: Any) -> list[tuple[str, str]]:
    """Tool results a Converse request sends back: ``[(toolUseId, text)]``."""
    return [
        (b["toolResult"]["toolUseId"], b["toolResult"]["content"][0]["text"])
        for m in body["messages"]
        for b in m["content"]
        if "toolResult" in b
    ]


_SIGV4 = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<sig>[0-9a-f]{64})$"
)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify_sigv4(request: Request, secret: str) -> dict[str, str]:
    """Check a request's AWS Signature Version 4 against ``secret``; return the
    credential's parts (``key``, ``date``, ``region``, ``service``).

    Raises:
        AssertionError: the ``Authorization`` header is malformed or the signature differs.
    """
    auth = request.headers.get("authorization", "")
    found = _SIGV4.match(auth)
    assert found, f"not a SigV4 Authorization header: {auth!r}"
    parts = found.groupdict()
    amz_date = request.headers["x-amz-date"]
    assert amz_date.startswith(parts["date"]), "x-amz-date and credential date differ"
    path, _, query = request.path.partition("?")
    # Non-S3 services sign the URI-encoded path once more.
    canonical_uri = urllib.parse.quote(path, safe="/~")
    pairs = sorted(urllib.parse.parse_qsl(query, keep_blank_values=True))
    canonical_query = "&".join(
        f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
        for k, v in pairs
    )
    signed = parts["signed"].split(";")
    canonical_headers = "".join(f"{h}:{' '.join(request.headers[h].split())}\n" for h in signed)
    payload = hashlib.sha256(request.raw).hexdigest()
    canonical = "\n".join(
        [
            request.method,
            canonical_uri,
            canonical_query,
            canonical_headers,
            parts["signed"],
            payload,
        ]
    )
    scope = f"{parts['date']}/{parts['region']}/{parts['service']}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + secret).encode(), parts["date"])
    for part in (parts["region"], parts["service"], "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, parts["sig"]), "SigV4 signature does not match"
    return {k: parts[k] for k in ("key", "date", "region", "service")}


# --- Google Gemini ------------------------------------------------------------------------


def gemini_reply(
    text: str | None = None,
    calls: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    thought: str | None = None,
    prompt_tokens: int = 9,
    candidate_tokens: int = 4,
) -> dict[str, Any]:
    """A ``generateContent`` reply; ``calls`` are ``(name, args)`` (Gemini sends no ids)."""
    parts: list[dict[str, Any]] = []
    if thought is not None:
        parts.append({"text": thought, "thought": True})
    if text is not None:
        parts.append({"text": text})
    for name, args in calls or []:
        parts.append({"functionCall": {"name": name, "args": args}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": prompt_tokens,
            "candidatesTokenCount": candidate_tokens,
            "totalTokenCount": prompt_tokens + candidate_tokens,
        },
        "modelVersion": "gemini-test-001",
    }


_GRPC_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
}


def gemini_error(message: str, status: int = 500) -> dict[str, Any]:
    """A Google API error body."""
    return {
        "error": {"code": status, "message": message, "status": _GRPC_STATUS.get(status, "UNKNOWN")}
    }


def gemini_throttle() -> Reply:
    """Gemini's quota answer."""
    return Reply(gemini_error("Resource has been exhausted (e.g. check quota).", 429), status=429)


def gemini_results(body: Any) -> list[tuple[str, str]]:
    """Tool results a Gemini request sends back: ``[(name, result)]``."""
    out = []
    for content in body["contents"]:
        for part in content["parts"]:
            response = part.get("functionResponse") or part.get("function_response")
            if response:
                result = response["response"]
                out.append((response["name"], result.get("result", result.get("error"))))
    return out
