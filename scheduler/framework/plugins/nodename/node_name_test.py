from __future__ import annotations

import random
from typing import Any

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, ActionType, QueueingHint
from scheduler.framework.plugins.nodename.node_name import ERR_REASON, NodeName
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def make_pod(node_name: str = "") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"nodeName": node_name, "containers": [{"name": "c"}]}}


def make_node(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def snapshot(count: int) -> Snapshot:
    snap = Snapshot()
    snap.rebuild([NodeInfo(make_node(f"n{i}")) for i in range(count)])
    return snap


def test_a_named_node_is_the_only_fit() -> None:
    plugin = NodeName(None, new_handle())
    pod = PodInfo(make_pod("n1"))
    assert plugin.filter(CycleState(), pod, NodeInfo(make_node("n1"))) is None
    assert plugin.filter(CycleState(), pod, NodeInfo(make_node("n2"))) == Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON)
    assert plugin.filter(CycleState(), PodInfo(make_pod()), NodeInfo(make_node("n2"))) is None


def test_filter_nodes_agrees_with_filter() -> None:
    rng = random.Random(1)
    plugin = NodeName(None, new_handle())
    for count in (1, 2, 30):
        snap = snapshot(count)
        for wanted in ("", "n0", f"n{count - 1}", f"n{rng.randrange(count)}", "elsewhere"):
            pod = PodInfo(make_pod(wanted))
            mask = plugin.filter_nodes(CycleState(), pod, snap)
            got = np.ones(count, dtype=bool) if mask is None else mask
            scalar = [is_success(plugin.filter(CycleState(), pod, ni)) for ni in snap.node_infos]
            assert got.tolist() == scalar


def test_only_the_named_node_being_added_requeues() -> None:
    [event] = NodeName(None, new_handle()).events_to_register()
    assert (event.event.resource, event.event.action_type) == (NODE, ActionType.ADD)
    assert event.hint_fn is not None
    assert event.hint_fn(make_pod("n1"), None, make_node("n1")) == QueueingHint.QUEUE
    assert event.hint_fn(make_pod("n1"), None, make_node("n2")) == QueueingHint.QUEUE_SKIP
    assert event.hint_fn(make_pod(), None, make_node("n2")) == QueueingHint.QUEUE
