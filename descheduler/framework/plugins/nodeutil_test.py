"""Node fit as the wrapped plugins use it: the pod's own node and the nodes other than it."""

from __future__ import annotations

from descheduler.framework.plugins.nodeutil import (
    NodeFit,
    pod_fits_any_node,
    pod_fits_any_other_node,
)
from descheduler.framework.testing import node, pod


def test_a_full_node_still_fits_the_pod_running_on_it() -> None:
    full = pod("big", 4000, 0, "n1")
    n1, n2 = node("n1"), node("n2", cpu=1000)
    fit = NodeFit(lambda name: [full] if name == "n1" else [])
    assert fit.errors(full, n1) == []
    assert fit.errors(full, n2) == ["insufficient cpu"]
    assert pod_fits_any_node(fit, full, [n1, n2])
    assert not pod_fits_any_other_node(fit, full, [n1, n2])
    assert pod_fits_any_other_node(fit, pod("small", 500, 0, "n1"), [n1, n2])
