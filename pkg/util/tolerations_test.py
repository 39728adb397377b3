from __future__ import annotations

import pytest

from pkg.util.tolerations import tolerates_taint, tolerations_tolerate_taint

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(("toleration", "tolerated"), [
    ({"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}, True),
    # Equal is the default operator.
    ({"key": "dedicated", "value": "gpu"}, True),
    ({"key": "dedicated", "value": "cpu"}, False),
    ({"key": "dedicated", "operator": "Exists"}, True),
    ({"key": "other", "operator": "Exists"}, False),
    # An empty key with Exists tolerates every taint.
    ({"operator": "Exists"}, True),
    ({"operator": "Exists", "effect": "NoExecute"}, False),
    ({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, True),
    ({"key": "dedicated", "operator": "Gt", "value": "1"}, False),
])
def test_tolerates_taint(toleration: dict[str, str], tolerated: bool) -> None:
    assert tolerates_taint(toleration, TAINT) is tolerated


def test_a_taint_without_value_needs_an_empty_value_or_exists() -> None:
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    assert tolerates_taint({"key": "node.kubernetes.io/unschedulable"}, taint)
    assert not tolerates_taint({"key": "node.kubernetes.io/unschedulable", "value": "x"}, taint)


def test_any_of_several_tolerations() -> None:
    assert tolerations_tolerate_taint([{"key": "a", "operator": "Exists"},
                                       {"key": "dedicated", "operator": "Exists"}], TAINT)
    assert not tolerations_tolerate_taint([{"key": "a", "operator": "Exists"}], TAINT)
    assert not tolerations_tolerate_taint(None, TAINT)
