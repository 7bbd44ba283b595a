"""Tool parameter injection in the API: ``@tool(injected_args=...)``, ``InjectedArg``, the
schema the model sees, merging and the checks (as Apache Flink Agents main)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flink_agents.api.decorators import tool
from flink_agents.api.tools import InjectedArg, ToolParameterSource
from flink_agents.api.tools.function_tool import FunctionTool
from flink_agents.api.tools.tool import Tool
from flink_agents.api.tools.tool_parameter_injection import (
    merge_injected_args,
    normalize_injected_args,
)


def query_order(order_id: str, tenant_id: str, limit: int = 3) -> str:
    """Look an order up (never decorated here: decorators mark the function itself).

    Args:
        order_id: the order.
        tenant_id: the tenant.
        limit: how many.
    """
    return f"{tenant_id}:{order_id}:{limit}"


def merged_order(order_id: str, tenant_id: str, limit: int = 3) -> str:
    """Look an order up.

    Args:
        order_id: the order.
        tenant_id: the tenant.
        limit: how many.
    """
    return f"{tenant_id}:{order_id}:{limit}"


@tool(injected_args={"tenant_id": InjectedArg.from_config("tenant_id")})
@staticmethod
def decorated(order_id: str, tenant_id: str) -> str:
    """Look an order up.

    Args:
        order_id: the order.
        tenant_id: the tenant.
    """
    return f"{tenant_id}:{order_id}"


def flexible(order_id: str, **kwargs: str) -> str:
    return f"{kwargs['tenant_id']}:{order_id}"


def test_the_decorator_records_them_and_the_schema_hides_them() -> None:
    made = FunctionTool.from_callable(decorated)
    assert made.injected_args == {"tenant_id": InjectedArg.from_config("tenant_id")}
    schema = made.metadata.args_schema
    assert set(schema["properties"]) == {"order_id"} and schema["required"] == ["order_id"]
    assert "tenant" not in str(made.metadata.to_openai_tool())
    # the call itself still takes and checks the injected parameter
    assert made.call(order_id="o", tenant_id="t") == "t:o"


def test_specs_default_to_sensory_memory_and_the_parameter_name() -> None:
    specs = normalize_injected_args(
        {"tenant_id": {"key": "request.tenant_id"}, "limit": {"source": "CONFIG"}}
    )
    assert specs == {
        "tenant_id": InjectedArg.from_sensory_memory("request.tenant_id"),
        "limit": InjectedArg.from_config("limit"),
    }
    assert InjectedArg(source="Short_Term_Memory").source is ToolParameterSource.SHORT_TERM_MEMORY


def test_malformed_specs_are_errors() -> None:
    with pytest.raises(TypeError, match="'injected_args' must be a dict"):
        tool(injected_args=["tenant_id"])(query_order)  # type: ignore[arg-type]
    for bad in ("tenant.id", 1):
        with pytest.raises(TypeError, match="Unsupported injected arg spec"):
            normalize_injected_args({"tenant_id": bad})  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        normalize_injected_args({"tenant_id": {"source": "environment"}})


def test_a_parameter_the_function_lacks_is_an_error_unless_it_takes_kwargs() -> None:
    with pytest.raises(ValueError, match=r"Injected tool parameter\(s\) tenent_id do not match"):
        tool(injected_args={"tenent_id": InjectedArg.from_config("t")})(query_order)
    made = Tool.from_callable(flexible, injected_args={"tenant_id": InjectedArg.from_config("t")})
    assert set(made.metadata.args_schema["properties"]) == {"order_id"}


def test_decorator_and_declaration_merge_and_must_agree() -> None:
    marked = tool(injected_args={"tenant_id": InjectedArg.from_config("tenant.id")})(merged_order)
    same = FunctionTool.from_callable(
        marked, injected_args={"tenant_id": InjectedArg.from_config("tenant.id")}
    )
    assert same.injected_args == {"tenant_id": InjectedArg.from_config("tenant.id")}
    more = FunctionTool.from_callable(marked, injected_args={"limit": {"source": "config"}})
    assert set(more.injected_args) == {"tenant_id", "limit"}
    assert set(more.metadata.args_schema["properties"]) == {"order_id"}
    assert "required" in more.metadata.args_schema
    with pytest.raises(ValueError, match="injected_args conflict"):
        FunctionTool.from_callable(
            marked, injected_args={"tenant_id": InjectedArg.from_sensory_memory("t")}
        )
    with pytest.raises(ValueError, match="conflict"):
        merge_injected_args(
            {"a": InjectedArg.from_config("x")}, {"a": InjectedArg.from_config("y")}, tool_name="t"
        )


def test_all_parameters_injected_leaves_no_required_key() -> None:
    made = FunctionTool.from_callable(
        query_order,
        injected_args={
            "order_id": InjectedArg.from_key(),
            "tenant_id": InjectedArg.from_config("t"),
        },
    )
    assert made.metadata.args_schema == {
        "properties": {"limit": {"default": 3, "description": "how many.", "type": "integer"}},
        "type": "object",
    }


def test_json_round_trip_and_no_field_without_injection() -> None:
    made = FunctionTool.from_callable(
        query_order, injected_args={"tenant_id": InjectedArg.from_config("tenant.id")}
    )
    text = made.model_dump_json()
    assert '"injected_args":{"tenant_id":{"source":"config","key":"tenant.id"}}' in text
    again = FunctionTool.model_validate_json(text)
    assert again.injected_args == made.injected_args
    assert again.metadata == made.metadata
    assert "injected_args" not in FunctionTool.from_callable(query_order).model_dump_json()
