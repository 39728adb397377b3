"""RemovePodsViolatingNodeTaints, mirroring upstream's ``node_taint_test.go`` cases: untolerated
NoSchedule taints evict, PreferNoSchedule ones only when included, NoExecute never; excluded
and included taints by key or key=value; evictor filters and namespaces."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.plugins.kubernetes.testing import Env, taint
from descheduler.framework.testing import DS, node, pod

TOLERATE = [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]


def tainted(key: str = "dedicated", value: str = "db",
            effect: str = "NoSchedule") -> dict[str, Any]:
    return taint(node("n1"), key, value, effect)


@pytest.mark.parametrize("name, n1, pods, args, evicted", [
    ("an untolerated NoSchedule taint", tainted(),
     [pod("p1", 100, 0, "n1"), pod("tolerant", 100, 0, "n1", tolerations=TOLERATE)], {},
     ["p1"]),
    ("an untainted node keeps its pods", node("n1"), [pod("p1", 100, 0, "n1")], {}, []),
    ("PreferNoSchedule is ignored by default", tainted(effect="PreferNoSchedule"),
     [pod("p1", 100, 0, "n1")], {}, []),
    ("PreferNoSchedule included", tainted(effect="PreferNoSchedule"),
     [pod("p1", 100, 0, "n1")], {"includePreferNoSchedule": True}, ["p1"]),
    ("NoExecute is the taint manager's", tainted(effect="NoExecute"),
     [pod("p1", 100, 0, "n1")], {}, []),
    ("excluded by key", tainted(), [pod("p1", 100, 0, "n1")],
     {"excludedTaints": ["dedicated"]}, []),
    ("excluded by key=value", tainted(), [pod("p1", 100, 0, "n1")],
     {"excludedTaints": ["dedicated=db"]}, []),
    ("an exclusion with another value does not apply", tainted(), [pod("p1", 100, 0, "n1")],
     {"excludedTaints": ["dedicated=web"]}, ["p1"]),
    ("included by key=value", tainted(), [pod("p1", 100, 0, "n1")],
     {"includedTaints": ["dedicated=db"]}, ["p1"]),
    ("not among the included taints", tainted(), [pod("p1", 100, 0, "n1")],
     {"includedTaints": ["other"]}, []),
    ("DaemonSet pods are not evictable", tainted(), [pod("ds", 100, 0, "n1", DS)], {}, []),
    ("namespaces", tainted(),
     [pod("a", 100, 0, "n1", namespace="a"), pod("b", 100, 0, "n1", namespace="b")],
     {"namespaces": {"include": ["b"]}}, ["b"]),
])
def test_node_taints(name: str, n1: dict[str, Any], pods: list[dict[str, Any]],
                     args: dict[str, Any], evicted: list[str]) -> None:
    assert Env("RemovePodsViolatingNodeTaints", [n1, node("n2")], pods, args).run() == evicted, \
        name
