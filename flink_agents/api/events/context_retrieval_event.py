"""The built-in retrieval (RAG) protocol."""

from __future__ import annotations

from typing import ClassVar
from uuid import UUID

from flink_agents.api.events.event import Event
from flink_agents.api.vector_stores.vector_store import Document


class ContextRetrievalRequestEvent(Event):
    """Find the documents of vector store ``vector_store`` closest to ``query``."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_request_event"
    query: str
    vector_store: str
    max_results: int = 3


class ContextRetrievalResponseEvent(Event):
    """The documents found for request ``request_id``, best first."""

    EVENT_TYPE: ClassVar[str] = "_context_retrieval_response_event"
    request_id: UUID
    query: str
    documents: list[Document]
