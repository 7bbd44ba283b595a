"""RAGAgent: a ready-made retrieval-augmented agent that answers with citations.

Per input: the question is taken from the input (a text, or the ``question`` / ``query``
field of a dict, pydantic model or Row); the ``top_k`` documents of ``vector_store``
closest to it are retrieved (a durable call: a restore answers it from the log), numbered
and put into the prompt as context; the chat model answers, citing the documents it used
by their numbers in square brackets (``[1]``, ``[2][3]``, ``[1, 3]``); the output is::

    {"question": "...",
     "answer": "Checkpoints snapshot state [1].",
     "citations": [{"index": 1, "id": "checkpoints", "content": "...", "metadata": {...},
                    "score": 0.81}],
     "retrieved": ["checkpoints", "watermarks", ...]}

``citations`` are the retrieved documents the answer cites, in the order it first cites
them; numbers that name no retrieved document are dropped. ``retrieved`` lists the ids of
every document that was given as context, best first. Upstream Apache Flink Agents has no
built-in RAG agent (its RAG example wires the retrieval events by hand): the name and
arguments follow this project's issue.

Documents get into the store with :mod:`flink_agents.api.agents.rag_ingestion` (a Flink
job over a bounded source, upserting by document id), or any way the store offers.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from typing import Any

from pydantic import BaseModel

from flink_agents.api.agents.agent import Agent
from flink_agents.api.chat_message import ChatMessage, MessageRole
from flink_agents.api.events.chat_event import ChatRequestEvent, ChatResponseEvent
from flink_agents.api.events.event import InputEvent, OutputEvent
from flink_agents.api.prompts.prompt import Prompt
from flink_agents.api.resource import ResourceDescriptor, ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores._filters import parse_filter
from flink_agents.api.vector_stores.vector_store import Document, VectorStoreQuery
from flink_agents.errors import InputSchemaError

__all__ = ["DEFAULT_PROMPT", "RAGAgent", "cited_numbers"]

log = logging.getLogger("flink_agents.rag_agent")

_EMBEDDING = "_rag_embedding"
_STORE = "_rag_vector_store"
_MODEL = "_rag_chat_model"
_PROMPT = "_rag_prompt"
_STATE = "_rag"

#: The prompt when none is given: ``{context}`` gets the numbered documents, ``{question}``
#: the question.
DEFAULT_PROMPT = (
    "Answer the question using only the numbered documents below. After each statement, "
    "cite the documents it comes from by their numbers in square brackets, like [1] or "
    "[2][3]. If the documents do not hold the answer, say that you do not know.\n\n"
    "Documents:\n{context}\n\nQuestion: {question}"
)

_CITATION = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_QUESTION_FIELDS = ("question", "query")


def cited_numbers(answer: str) -> list[int]:
    """The document numbers an answer cites (``[1]``, ``[2][3]``, ``[1, 3]``), each once,
    in the order first cited."""
    seen: dict[int, None] = {}
    for group in _CITATION.findall(answer or ""):
        for part in group.split(","):
            seen.setdefault(int(part), None)
    return list(seen)


def _question(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump()
    else:
        as_dict = getattr(value, "as_dict", None)  # a pyflink Row
        if callable(as_dict):
            value = as_dict()
    if isinstance(value, dict):
        for field in _QUESTION_FIELDS:
            if isinstance(value.get(field), str):
                return str(value[field])
    raise InputSchemaError(
        f"RAGAgent needs a question: a text, or a record with a text field "
        f"{' or '.join(repr(f) for f in _QUESTION_FIELDS)}; got {value!r}"[:600],
        action="rag_retrieve_action",
    )


def _context(documents: list[dict[str, Any]]) -> str:
    if not documents:
        return "(no documents found)"
    return "\n".join(f"[{i}] {d['content']}" for i, d in enumerate(documents, start=1))


def _plain(doc: Document) -> dict[str, Any]:
    """A retrieved document as JSON-like values (sensory memory and the output hold it)."""
    return {
        "id": doc.id,
        "content": doc.content,
        "metadata": json.loads(json.dumps(doc.metadata, default=str)),
        "score": doc.score,
    }


async def rag_retrieve_action(event: InputEvent, ctx: RunnerContext) -> None:
    """Retrieve the documents closest to the question and ask the model with them."""
    question = _question(event.input)
    store = ctx.get_resource(ctx.get_action_config_value("vector_store"), ResourceType.VECTOR_STORE)
    query = VectorStoreQuery(
        query_text=question,
        limit=int(ctx.get_action_config_value("top_k")),
        filters=ctx.get_action_config_value("filters"),
    )
    result = await ctx.durable_execute_async(store.aquery, query)  # type: ignore[attr-defined]
    min_score = ctx.get_action_config_value("min_score")
    documents = [
        _plain(d)
        for d in result.documents
        if min_score is None or (d.score is not None and d.score >= float(min_score))
    ]
    ctx.sensory_memory.set(f"{_STATE}.question", question)
    ctx.sensory_memory.set(f"{_STATE}.documents", documents)
    prompt = ctx.get_resource(_PROMPT, ResourceType.PROMPT)
    assert isinstance(prompt, Prompt)
    messages = prompt.format_messages(
        MessageRole.USER, context=_context(documents), question=question
    )
    if "question" not in prompt.variables:
        messages.append(ChatMessage(role=MessageRole.USER, content=question))
    ctx.send_event(ChatRequestEvent(model=ctx.get_action_config_value("model"), messages=messages))


def rag_answer_action(event: ChatResponseEvent, ctx: RunnerContext) -> None:
    """Output the answer with the documents it cites."""
    documents: list[dict[str, Any]] = ctx.sensory_memory.get(f"{_STATE}.documents") or []
    answer = event.response.content or ""
    citations = []
    for number in cited_numbers(answer):
        if 1 <= number <= len(documents):
            citations.append({"index": number, **documents[number - 1]})
        else:
            log.debug("answer cites [%d], but %d documents were retrieved", number, len(documents))
    ctx.send_event(
        OutputEvent(
            output={
                "question": ctx.sensory_memory.get(f"{_STATE}.question"),
                "answer": answer,
                "citations": citations,
                "retrieved": [d["id"] for d in documents],
            }
        )
    )


def _named(
    agent: Agent,
    value: ResourceDescriptor | str | None,
    own_name: str,
    rtype: ResourceType,
    argument: str,
) -> str | None:
    """The resource name for ``value``: a name as is, a descriptor added under ``own_name``."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, ResourceDescriptor):
        raise TypeError(
            f"{argument} must be a ResourceDescriptor or the name of a resource, got "
            f"{type(value).__name__}"
        )
    agent.add_resource(own_name, rtype, value)
    return own_name


class RAGAgent(Agent):
    """Answers each input from the documents of a vector store, citing them.

    Args:
        embedding: descriptor of an embedding model *setup* (or the name of one): the
            store's ``embedding_model``. None when the vector store names its own.
        vector_store: descriptor of a vector store (or the name of one added to the
            environment); a descriptor without ``embedding_model`` gets ``embedding``.
        chat_model: descriptor of a chat model *setup* (or the name of one).
        top_k: documents retrieved per question.
        prompt: a :class:`Prompt` or a text with ``{context}`` (the numbered documents) and
            ``{question}`` placeholders (without ``{question}``, the question follows as a
            user message); default :data:`DEFAULT_PROMPT`. Ask for ``[n]`` citations.
        min_score: documents less similar than this are not given to the model.
        filters: metadata filter of every query (see
            :mod:`flink_agents.api.vector_stores.vector_store`).
        name: the agent's name.
        description: what the agent does.

    Raises:
        ValueError: ``top_k`` below 1, a prompt without ``{context}``, or ``embedding``
            given twice (as an argument and as the store's ``embedding_model``).
        VectorStoreError: a malformed ``filters``.
        TypeError: an argument of the wrong type.
    """

    def __init__(
        self,
        embedding: ResourceDescriptor | str | None = None,
        vector_store: ResourceDescriptor | str | None = None,
        chat_model: ResourceDescriptor | str | None = None,
        top_k: int = 3,
        prompt: Prompt | str | None = None,
        *,
        min_score: float | None = None,
        filters: dict[str, Any] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        super().__init__()
        if vector_store is None or chat_model is None:
            raise TypeError("RAGAgent needs vector_store= and chat_model=")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int of at least 1, got {top_k!r}")
        if isinstance(prompt, str):
            prompt = Prompt.from_text(prompt)
        elif prompt is None:
            prompt = Prompt.from_text(DEFAULT_PROMPT)
        elif not isinstance(prompt, Prompt):
            raise TypeError(f"prompt must be a Prompt or a text, got {type(prompt).__name__}")
        if "context" not in prompt.variables:
            raise ValueError(
                "the RAG prompt needs a {context} placeholder: the numbered documents go there"
            )
        if filters is not None:
            parse_filter(filters)  # a malformed filter is an error now, not at the first input
        self.name = name
        self.description = description
        embedding_name = _named(
            self, embedding, _EMBEDDING, ResourceType.EMBEDDING_MODEL, "embedding"
        )
        if isinstance(vector_store, ResourceDescriptor) and embedding_name is not None:
            own = vector_store.arguments.get("embedding_model")
            if own is not None and own != embedding_name:
                raise ValueError(
                    f"the vector store names embedding_model={own!r} and embedding= is given "
                    "too: pass one of them"
                )
            vector_store = copy.copy(vector_store)  # the class object kept (by value)
            vector_store.arguments = {**vector_store.arguments, "embedding_model": embedding_name}
        elif isinstance(vector_store, str) and embedding_name is not None:
            raise ValueError(
                f"vector_store {vector_store!r} is a resource of the environment: set its "
                "embedding_model there and leave embedding= out"
            )
        store_name = _named(self, vector_store, _STORE, ResourceType.VECTOR_STORE, "vector_store")
        model_name = _named(self, chat_model, _MODEL, ResourceType.CHAT_MODEL, "chat_model")
        self.add_resource(_PROMPT, ResourceType.PROMPT, prompt)
        config = {
            "vector_store": store_name,
            "model": model_name,
            "top_k": top_k,
            "min_score": None if min_score is None else float(min_score),
            "filters": filters,
        }
        self.add_action("rag_retrieve_action", [InputEvent], rag_retrieve_action, **config)
        self.add_action("rag_answer_action", [ChatResponseEvent], rag_answer_action, **config)
