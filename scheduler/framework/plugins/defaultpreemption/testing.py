"""Test helpers for preemption: pods and nodes, a resource Filter, recording fakes, and a
profile that runs one scheduling attempt up to PostFilter.

The resource filter stands in for NodeResourcesFit (cpu, memory and pod count, with its
reason strings); the rest fake what the scheduler hands the framework.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pkg.client.errors import ApiError
from pkg.util.clock import FakeClock
from pkg.util.podresources import CPU, MEMORY
from scheduler.apis.config import DefaultPreemptionArgs
from scheduler.diagnosis import Diagnosis
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Plugin,
    PostFilterResult,
    PreFilterPlugin,
    QueueSortPlugin,
)
from scheduler.framework.plugins.defaultpreemption.default_preemption import DefaultPreemption
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.schedule_one import GenericScheduler


def make_node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110,
              labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)}}}


def make_pod(name: str, priority: int = 0, cpu: str = "1", memory: str = "1Gi",
             node: str = "", namespace: str = "default", labels: dict[str, str] | None = None,
             start_time: str | None = None, **spec: Any) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                     "labels": labels or {}},
        "spec": {"priority": priority, "nodeName": node, **spec,
                 "containers": [{"name": "c", "resources": {
                     "requests": {"cpu": cpu, "memory": memory}}}]},
        "status": {},
    }
    if start_time:
        pod["status"]["startTime"] = start_time
    return pod


def node_infos(nodes: Iterable[dict[str, Any]], pods: Iterable[dict[str, Any]]
               ) -> list[NodeInfo]:
    infos = {n["metadata"]["name"]: NodeInfo(n) for n in nodes}
    for p in pods:
        infos[p["spec"]["nodeName"]].add_pod(PodInfo(p))
    return list(infos.values())


class ResourceFit(FilterPlugin):
    """NodeResourcesFit's Filter for cpu, memory and the pod count."""

    name = "NodeResourcesFit"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        reasons = []
        if len(node_info.pods) + 1 > node_info.allowed_pod_number:
            reasons.append("Too many pods")
        for r in (CPU, MEMORY):
            want = pod.requests.get(r, 0)
            if want and want > node_info.allocatable.get(r, 0) - node_info.requested_of(r):
                reasons.append(f"Insufficient {r}")
        return unschedulable(*reasons) if reasons else None


class NodeLabel(FilterPlugin):
    """Rejects, for good, nodes without the label ``pool=ok`` (like NodeAffinity)."""

    name = "NodeLabel"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if node_info.labels.get("pool") == "ok":
            return None
        return unresolvable("node(s) didn't match Pod's node affinity/selector")


class Sort(QueueSortPlugin):
    name = "PrioritySort"


class Bind(BindPlugin):
    name = "DefaultBinder"


@dataclass
class FakeClient:
    """Records patches and deletes of pods (and other requests, which answer nothing);
    names in ``gone`` answer 404."""

    gone: set[str] = field(default_factory=set)
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def request(self, method: str, path: str, *, body: Any = None) -> Any:
        self.calls.append((method, path, body, None))
        return {}

    def patch(self, resource: Any, name: str, patch: Any, namespace: str | None = None, *,
              patch_type: str = "merge", subresource: str | None = None) -> Any:
        self.calls.append(("patch", name, patch, subresource))
        if name in self.gone:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        return {}

    def delete(self, resource: Any, name: str, namespace: str | None = None) -> Any:
        self.calls.append(("delete", name))
        if name in self.gone:
            raise ApiError(404, "NotFound", f'pods "{name}" not found')
        return {}

    def deleted(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "delete"]


@dataclass
class FakeRecorder:
    # (regarding, related, type, reason, action, note)
    events: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)

    def eventf(self, regarding: Any, related: Any, type_: str, reason: str, action: str,
               note: str, *args: Any) -> None:
        self.events.append((regarding["metadata"]["name"],
                            related["metadata"]["name"] if related is not None else "",
                            type_, reason, action, note % args))


class FakeNominator:
    def __init__(self, nominated: dict[str, list[PodInfo]] | None = None) -> None:
        self.nominated = nominated or {}
        self.deleted: list[str] = []

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.nominated.get(node_name, ()))

    def nodes_with_nominated_pods(self) -> list[str]:
        return [n for n, pods in self.nominated.items() if pods]

    def delete_nominated_pod_if_exists(self, pod: Mapping[str, Any]) -> None:
        name = pod["metadata"]["name"]
        self.deleted.append(name)
        self._drop(name)

    def add_nominated_pod(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        self._drop(pod_info.name)
        self.nominated.setdefault(node_name or "", []).append(pod_info)

    def nominated_node_of(self, name: str) -> str:
        return next((n for n, pods in self.nominated.items() if any(p.name == name
                                                                   for p in pods)), "")

    def _drop(self, name: str) -> None:
        for pods in self.nominated.values():
            pods[:] = [p for p in pods if p.name != name]


class FixedRng:
    """``randrange`` always answers ``offset`` (the dry run's starting node)."""

    def __init__(self, offset: int = 0) -> None:
        self.offset = offset

    def randrange(self, n: int) -> int:
        return self.offset % n


def build_framework(infos: list[NodeInfo], *, plugins: Sequence[type[Plugin]] = (ResourceFit,),
                    args: DefaultPreemptionArgs | None = None, offset: int = 0,
                    **deps: Any) -> Framework:
    """A profile with ``plugins`` (Filter and PreFilter ones) and DefaultPreemption."""
    snapshot = Snapshot()
    # Rows first: Snapshot.rebuild cannot yet add rows for resources new to it (hugepages of
    # the embedded server's nodes).
    snapshot.ensure_resources(sorted({r for ni in infos for r in (*ni.allocatable,
                                                                  *ni.requested)}))
    snapshot.rebuild(infos)
    every: tuple[type[Plugin], ...] = (*plugins, Sort, Bind, DefaultPreemption)
    registry = {p.name: p for p in every}
    config: dict[str, list[tuple[str, int]]] = {
        "queueSort": [(Sort.name, 0)], "bind": [(Bind.name, 0)],
        "postFilter": [(DefaultPreemption.name, 0)],
        "filter": [(p.name, 0) for p in plugins if issubclass(p, FilterPlugin)],
        "preFilter": [(p.name, 0) for p in plugins if issubclass(p, PreFilterPlugin)],
    }
    deps.setdefault("clock", FakeClock())
    fwk = Framework("default-scheduler", config, registry,
                    {DefaultPreemption.name: args or DefaultPreemptionArgs()},
                    FrameworkDeps(snapshot=snapshot, **deps))
    preemption = fwk.plugin(DefaultPreemption.name)
    assert isinstance(preemption, DefaultPreemption)
    preemption.rng = FixedRng(offset)  # type: ignore[assignment]
    return fwk


@dataclass
class Attempt:
    diagnosis: Diagnosis
    result: PostFilterResult | None
    status: Status
    state: CycleState


def attempt(fwk: Framework, pod: dict[str, Any] | PodInfo) -> Attempt:
    """Schedule ``pod`` (it must fit nowhere) and run PostFilter, as the scheduler does."""
    pi = pod if isinstance(pod, PodInfo) else PodInfo(pod)
    state = CycleState()
    feasible, diagnosis, _ = GenericScheduler().find_nodes_that_fit(fwk, state, pi)
    assert len(feasible) == 0, "the pod fits without preemption"
    result, status = fwk.run_post_filter(state, pi, diagnosis.node_to_status)
    return Attempt(diagnosis, result, status, state)


def succeeded(a: Attempt) -> bool:
    return a.status.code == Code.SUCCESS
