"""Actions selected by trigger-condition expressions (upstream's ``ActionMatcher``).

Exact event types stay a dict lookup in the run loop; only a plan with expressions makes a
:class:`ConditionalActions`, and the loop asks it for the actions an event triggers: those
with an exact match first, then each action with expressions, in declaration order, whose
first true expression selects it (an action runs once per event however many of its
conditions match). Conditions are compiled once, when the runner is made; an event's
variables are built only from the attributes the expressions read, and only for the
conditions that can be true for its type (``CompiledCondition.event_types``: an expression
with a ``type == "x"`` conjunct is not evaluated for other types; the candidates are worked
out once per type). Costs per run: docs/ARCHITECTURE.md, section 7.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic_core import to_jsonable_python

from flink_agents.api.core_options import ConditionEvaluationFailureStrategy
from flink_agents.api.events.event import Event
from flink_agents.api.events.event_type import event_type_constants
from flink_agents.api.trigger_conditions import (
    CompiledCondition,
    ConditionEvaluationError,
    compile_condition,
)
from flink_agents.errors import ActionError
from flink_agents.plan.agent_plan import ActionPlan, AgentPlan

log = logging.getLogger("flink_agents.runtime")

_PLAIN = (str, int, float, bool, type(None))
#: Event types whose candidate actions are remembered (beyond: worked out per event).
_MAX_TYPES = 4096


def _normalize(value: Any) -> Any:
    """A value as the expressions see it: JSON-like (models, dataclasses, Rows... as maps)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (dict, list)) and _plain_tree(value):
        return value
    from flink_agents.api.events.event import _json_fallback

    return to_jsonable_python(value, fallback=_json_fallback)


def _plain_tree(value: Any) -> bool:
    if type(value) in _PLAIN:
        return True
    if isinstance(value, list):
        return all(_plain_tree(v) for v in value)
    if isinstance(value, dict):
        return all(type(k) is str and _plain_tree(v) for k, v in value.items())
    return False


class ConditionalActions:
    """The actions of a plan with trigger-condition expressions.

    Args:
        plan: the plan.
        entry: makes the run loop's entry (the tuple it runs an action from) of an action.
        strategy: what a failing expression does.
    """

    def __init__(
        self,
        plan: AgentPlan,
        entry: Callable[[ActionPlan], tuple[Any, ...]],
        strategy: ConditionEvaluationFailureStrategy,
    ) -> None:
        constants = event_type_constants()
        self._constants = constants
        self._strategy = ConditionEvaluationFailureStrategy(strategy)
        self._actions: list[tuple[tuple[Any, ...], list[CompiledCondition]]] = []
        keys: set[str] = set()
        reads_id = False
        for action in plan.conditional_actions():
            compiled = [compile_condition(text, constants) for text in action.trigger_conditions]
            for condition in compiled:
                keys |= condition.attribute_keys
                reads_id = reads_id or condition.reads_id
            self._actions.append((entry(action), compiled))
        self._keys = frozenset(keys)
        self._reads_id = reads_id
        #: Per event type, the actions (and their conditions) that may select it: empty
        #: for most types of a plan whose expressions name their type.
        self._by_type: dict[str, list[tuple[tuple[Any, ...], list[CompiledCondition]]]] = {}

    def _candidates(self, event_type: str) -> list[tuple[tuple[Any, ...], list[CompiledCondition]]]:
        candidates = []
        for entry, conditions in self._actions:
            possible = [
                c for c in conditions if c.event_types is None or event_type in c.event_types
            ]
            if possible:
                candidates.append((entry, possible))
        if len(self._by_type) < _MAX_TYPES:  # unified events may use many type strings
            self._by_type[event_type] = candidates
        return candidates

    def variables(self, event: Event) -> dict[str, Any]:
        """``type``, ``id``, ``EventType``, ``attributes`` (the keys read) and the same
        attributes as plain names (the framework's names win)."""
        attributes: dict[str, Any] = {}
        fields = event.__dict__
        extra = event.__pydantic_extra__ or {}
        for key in self._keys:
            if key in fields and key not in ("id", "type"):
                attributes[key] = _normalize(fields[key])
            elif key in extra:
                attributes[key] = _normalize(extra[key])
        variables = dict(attributes)
        variables["type"] = event.type
        if self._reads_id:  # str() of a UUID costs more than the rest of this
            variables["id"] = str(event.id)
        variables["EventType"] = self._constants
        variables["attributes"] = attributes
        return variables

    def match(
        self, event: Event, exact: list[tuple[Any, ...]] | None, key: Any
    ) -> list[tuple[Any, ...]] | None:
        """The loop entries of the actions ``event`` triggers: ``exact`` (the exact-type
        matches), then the actions an expression selects."""
        candidates = self._by_type.get(event.type)
        if candidates is None:
            candidates = self._candidates(event.type)
        if not candidates:
            return exact
        matched = list(exact) if exact else []
        chosen = {id(e[0]) for e in matched}
        variables: dict[str, Any] | None = None
        for entry, conditions in candidates:
            if id(entry[0]) in chosen:
                continue
            if variables is None:
                variables = self.variables(event)
            for condition in conditions:
                if self._evaluate(condition, variables, event, entry[0], key):
                    matched.append(entry)
                    break
        return matched or None

    def _evaluate(
        self,
        condition: CompiledCondition,
        variables: dict[str, Any],
        event: Event,
        action: ActionPlan,
        key: Any,
    ) -> bool:
        try:
            return condition.evaluate(variables)
        except ConditionEvaluationError as exc:
            if self._strategy is ConditionEvaluationFailureStrategy.FAIL:
                raise ActionError(
                    f"trigger condition {condition.source!r} of action {action.name!r} "
                    f"failed on event type {event.type!r}: {exc} (guard optional attributes "
                    "with has(...); action.trigger-condition.evaluate-failure-strategy is FAIL)",
                    key=key,
                    action=action.name,
                    event_id=str(event.id),
                ) from exc
            log.warning(
                "trigger condition %r of action %r failed on event %s (type %r, key %r): %s; "
                "treating it as false (guard optional attributes with has(...))",
                condition.source,
                action.name,
                event.id,
                event.type,
                key,
                exc,
            )
            return False
