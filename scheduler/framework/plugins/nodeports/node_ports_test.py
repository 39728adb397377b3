from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, POD, ActionType, QueueingHint
from scheduler.framework.plugins.nodeports.node_ports import ERR_REASON, NodePorts
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle


def port(host_port: int, ip: str = "", protocol: str = "") -> dict[str, Any]:
    p: dict[str, Any] = {"containerPort": 80, "hostPort": host_port}
    if ip:
        p["hostIP"] = ip
    if protocol:
        p["protocol"] = protocol
    return p


def make_pod(name: str, *ports: dict[str, Any], node: str = "") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "ports": list(ports)}]}}


def node_with(name: str, *pods: dict[str, Any]) -> NodeInfo:
    ni = NodeInfo({"metadata": {"name": name}, "status": {"allocatable": {"pods": "110"}}})
    for p in pods:
        ni.add_pod(PodInfo(p))
    return ni


def run(pod: dict[str, Any], ni: NodeInfo) -> Status | None:
    plugin, state, pi = NodePorts(None, new_handle()), CycleState(), PodInfo(pod)
    snap = Snapshot()
    snap.rebuild([ni])
    _, status = plugin.pre_filter(state, pi, snap)
    assert status is None
    return plugin.filter(state, pi, ni)


def test_a_pod_without_host_ports_skips_the_filter() -> None:
    pod = PodInfo(make_pod("p", {"containerPort": 80}))
    _, status = NodePorts(None, new_handle()).pre_filter(CycleState(), pod, Snapshot())
    assert status is not None and status.code == Code.SKIP


@pytest.mark.parametrize(("wanted", "used", "fits"), [
    (port(8080), port(8080), False),
    (port(8080), port(8081), True),
    (port(8080, protocol="UDP"), port(8080), True),
    (port(8080, protocol="UDP"), port(8080, protocol="UDP"), False),
    (port(8080, "127.0.0.1"), port(8080, "127.0.0.2"), True),
    (port(8080, "127.0.0.1"), port(8080, "127.0.0.1"), False),
    # 0.0.0.0 on either side takes the port on every ip.
    (port(8080, "127.0.0.1"), port(8080), False),
    (port(8080), port(8080, "127.0.0.1"), False),
    (port(8080, "0.0.0.0"), port(8080, "10.0.0.1", "TCP"), False),
])
def test_conflicts(wanted: dict[str, Any], used: dict[str, Any], fits: bool) -> None:
    status = run(make_pod("p", wanted), node_with("n", make_pod("a", used, node="n")))
    assert status == (None if fits else Status(Code.UNSCHEDULABLE, ERR_REASON))


def test_filter_nodes_agrees_with_filter() -> None:
    rng = random.Random(3)
    plugin = NodePorts(None, new_handle())
    outcomes = set()

    def random_port() -> dict[str, Any]:
        return port(rng.choice((80, 443, 8080)), rng.choice(("", "0.0.0.0", "10.0.0.1",
                                                            "10.0.0.2")),
                    rng.choice(("", "TCP", "UDP")))

    for _ in range(30):
        infos = []
        for i in range(40):
            pods = [make_pod(f"a{i}-{j}", *(random_port() for _ in range(rng.randrange(0, 2))),
                             node=f"n{i}") for j in range(rng.randrange(0, 3))]
            infos.append(node_with(f"n{i}", *pods))
        snap = Snapshot()
        snap.rebuild(infos)
        pod = PodInfo(make_pod("p", *(random_port() for _ in range(rng.randrange(1, 3)))))
        state = CycleState()
        plugin.pre_filter(state, pod, snap)
        mask = plugin.filter_nodes(state, pod, snap)
        got = np.ones(len(infos), dtype=bool) if mask is None else mask
        scalar = [is_success(plugin.filter(state, pod, ni)) for ni in infos]
        assert got.tolist() == scalar
        outcomes.update(scalar)
    assert outcomes == {True, False}


def test_events_and_the_pod_deleted_hint() -> None:
    events = NodePorts(None, new_handle()).events_to_register()
    assert [(e.event.resource, e.event.action_type) for e in events] == [
        (POD, ActionType.DELETE), (NODE, ActionType.ADD)]
    hint = events[0].hint_fn
    assert hint is not None
    pending = make_pod("p", port(8080))
    assert hint(pending, make_pod("a", port(8080), node="n"), None) == QueueingHint.QUEUE
    assert hint(pending, make_pod("a", port(9090), node="n"), None) == QueueingHint.QUEUE_SKIP
    assert hint(pending, make_pod("a", node="n"), None) == QueueingHint.QUEUE_SKIP
    # An unscheduled pod held no port.
    assert hint(pending, make_pod("a", port(8080)), None) == QueueingHint.QUEUE_SKIP
