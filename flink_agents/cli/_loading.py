"""Resolving ``module:attr`` references (agents, resources), ``--config`` values, and the
local environment and plan built from them."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flink_agents.errors import (
    CommandFailure,
    ConfigurationError,
    PlanValidationError,
    UsageError,
)

if TYPE_CHECKING:
    from flink_agents.api.agents.agent import Agent
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment
    from flink_agents.plan.agent_plan import AgentPlan


def _import_module(spec: str) -> Any:
    """Import ``spec``: a dotted module name or a path to a ``.py`` file."""
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise UsageError(f"module file {spec!r} does not exist")
        # Import by name from its folder: plans reference functions by module name, so the
        # module must be importable under the same name wherever the plan runs.
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        spec = path.stem
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # the console script does not put the cwd on the path
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if spec == missing or spec.startswith(missing + "."):
            raise UsageError(
                f"cannot import module {spec!r}: {exc}. Run from the folder that holds it "
                "or install it (the current directory is on the import path)"
            ) from exc
        raise CommandFailure(f"importing module {spec!r} failed: {exc}") from exc
    except UsageError:
        raise
    except Exception as exc:
        raise CommandFailure(
            f"importing module {spec!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def resolve_reference(reference: str, what: str) -> Any:
    """The object named by ``module:attr`` (``attr`` may be dotted).

    Args:
        reference: ``"package.module:attr"`` or ``"path/file.py:attr"``.
        what: what the reference should name, for messages (``"agent"``).

    Raises:
        UsageError: the reference is malformed, or the module or attribute is missing.
    """
    module_name, sep, attr = reference.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(
            f"{what} reference {reference!r} must look like 'package.module:name' "
            "(e.g. examples.react_agent:build_agent)"
        )
    obj = _import_module(module_name)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            available = sorted(n for n in dir(obj) if not n.startswith("_"))
            raise UsageError(
                f"{module_name!r} has no attribute {attr!r} (looked for {part!r}); "
                f"public names there: {', '.join(available[:20]) or 'none'}"
            ) from None
    return obj


def load_agent(reference: str) -> Agent:
    """The agent named by ``module:attr``: an instance, a subclass or a factory function.

    Raises:
        UsageError: the reference does not name an agent.
        CommandFailure: building the agent raised.
    """
    from flink_agents.api.agents.agent import Agent

    obj = resolve_reference(reference, "agent")
    if isinstance(obj, Agent):
        return obj
    if isinstance(obj, type):
        if not issubclass(obj, Agent):
            raise UsageError(
                f"{reference!r} is the class {obj.__name__}, which is not an Agent subclass"
            )
        _check_no_required_args(obj, reference)
        try:
            return obj()
        except Exception as exc:
            raise CommandFailure(
                f"creating {obj.__name__}() failed: {type(exc).__name__}: {exc}"
            ) from exc
    if callable(obj):
        _check_no_required_args(obj, reference)
        try:
            agent = obj()
        except Exception as exc:
            raise CommandFailure(
                f"calling {reference}() failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(agent, Agent):
            raise UsageError(
                f"{reference}() returned {type(agent).__name__}, not an Agent: the factory "
                "must return an agent instance"
            )
        return agent
    raise UsageError(
        f"{reference!r} is a {type(obj).__name__}, not an agent: name an Agent instance, an "
        "Agent subclass or a function without arguments that returns an agent"
    )


def _check_no_required_args(func: Callable[..., Any], reference: str) -> None:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]
    if required:
        raise UsageError(
            f"{reference!r} needs argument(s) {', '.join(required)}: name an agent instance or "
            "a function without arguments that builds the agent"
        )


def load_resources(spec: str) -> dict[str, Any]:
    """The resources named by ``module:function[:args]`` (or ``module:dict``).

    Raises:
        UsageError: the reference is malformed, missing, or does not give a dict.
        CommandFailure: the function raised.
    """
    parts = spec.split(":", 2)
    reference = ":".join(parts[:2])
    args: list[str] = []
    kwargs: dict[str, str] = {}
    if len(parts) == 3:
        for item in (p.strip() for p in parts[2].split(",")):
            if not item:
                continue
            name, eq, value = item.partition("=")
            if eq and name.isidentifier():
                kwargs[name] = value
            else:
                args.append(item)
    obj = resolve_reference(reference, "resources")
    if callable(obj):
        try:
            obj = obj(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(f"--resources {spec!r}: bad arguments: {exc}") from exc
        except ValueError as exc:
            raise UsageError(f"--resources {spec!r}: {exc}") from exc
        except Exception as exc:
            raise CommandFailure(
                f"--resources {spec!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
    elif args or kwargs:
        raise UsageError(f"--resources {reference!r} is not a function; it takes no arguments")
    if not isinstance(obj, dict):
        raise UsageError(
            f"--resources {spec!r} gave a {type(obj).__name__}; it must give a dict "
            "{name: ResourceDescriptor | Prompt | Tool}"
        )
    return obj


def parse_config(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` items as a dict (values parsed as JSON when they are valid JSON).

    Raises:
        UsageError: an item has no ``=`` or an empty key.
    """
    config: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip()
        if not eq or not key:
            raise UsageError(f"--config {item!r} must look like key=value (e.g. max-retries=5)")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        config[key] = value
    return config


def build_environment(
    config: Sequence[str], resources: Sequence[str]
) -> AgentsExecutionEnvironment:
    """A local environment with ``--config`` values and ``--resources`` added.

    Raises:
        UsageError: a bad config value or resource.
    """
    from flink_agents.api.execution_environment import AgentsExecutionEnvironment

    env = AgentsExecutionEnvironment.get_execution_environment()
    for key, value in parse_config(config).items():
        try:
            env.get_config().set_str(key, value)
        except ConfigurationError as exc:
            raise UsageError(f"--config {key}: {exc}") from exc
    for spec in resources:
        for name, resource in load_resources(spec).items():
            try:
                env.add_resource(name, resource)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"--resources {spec!r}: resource {name!r}: {exc}") from exc
    return env


def compile_plan(agent_ref: str, env: AgentsExecutionEnvironment) -> AgentPlan:
    """Compile the agent named by ``agent_ref`` with the environment's config and resources.

    Raises:
        CommandFailure: the agent is invalid (every problem is listed).
    """
    from flink_agents.plan.agent_plan import AgentPlan

    agent = load_agent(agent_ref)
    try:
        return AgentPlan.from_agent(agent, env.get_config(), env.resources, env.interceptors)
    except PlanValidationError as exc:
        raise CommandFailure(str(exc)) from exc
