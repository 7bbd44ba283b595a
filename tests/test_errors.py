"""The one error tree (flink_agents.errors): every error is drawn in the module docstring,
pickles, and the command's errors carry the process exit codes."""

from __future__ import annotations

import inspect
import pickle

import pytest

from flink_agents import errors
from flink_agents.errors import (
    ClusterError,
    CommandError,
    CommandFailure,
    FlinkAgentsError,
    PlanValidationError,
    UsageError,
)

ALL = sorted(
    (
        obj
        for obj in vars(errors).values()
        if inspect.isclass(obj) and issubclass(obj, FlinkAgentsError)
    ),
    key=lambda cls: cls.__name__,
)


@pytest.mark.parametrize("cls", ALL, ids=lambda cls: cls.__name__)
def test_every_error_is_in_the_tree_and_pickles(cls):
    assert f"+-- {cls.__name__} " in errors.__doc__ or cls is FlinkAgentsError
    err = cls(["a problem"]) if cls is PlanValidationError else cls("a problem")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls
    assert str(again) == str(err) and "a problem" in str(again)


def test_command_errors_carry_the_exit_codes():
    assert UsageError("bad").exit_code == 2
    assert CommandFailure("failed").exit_code == 1
    assert issubclass(UsageError, CommandError) and issubclass(CommandFailure, CommandError)
    assert pickle.loads(pickle.dumps(UsageError("bad"))).exit_code == 2


def test_cluster_error_is_one_class_and_still_a_runtime_error():
    from flink_agents.ops import cluster

    assert cluster.ClusterError is ClusterError
    assert issubclass(ClusterError, RuntimeError)  # what callers caught before it joined the tree
    with pytest.raises(ClusterError, match="no cluster was started"):
        cluster.cluster_status("/nonexistent/flink-agents-cluster")
