"""The built-in retrieval action: queries the vector store a request names."""

from __future__ import annotations

from flink_agents.api.events.context_retrieval_event import (
    ContextRetrievalRequestEvent,
    ContextRetrievalResponseEvent,
)
from flink_agents.api.events.event import Event
from flink_agents.api.resource import ResourceType
from flink_agents.api.runner_context import RunnerContext
from flink_agents.api.vector_stores.vector_store import VectorStoreQuery


async def context_retrieval_action(event: Event, ctx: RunnerContext) -> None:
    """Query the vector store named in the request."""
    if not isinstance(event, ContextRetrievalRequestEvent):
        return
    store = ctx.get_resource(event.vector_store, ResourceType.VECTOR_STORE)
    result = await ctx.durable_execute_async(
        store.aquery,  # type: ignore[attr-defined]
        VectorStoreQuery(query_text=event.query, limit=event.max_results),
    )
    ctx.send_event(
        ContextRetrievalResponseEvent(
            request_id=event.id, query=event.query, documents=result.documents
        )
    )
