"""Reconciler mode as a pure planner (upstream `pkg/koordlet/runtimehooks/reconciler`).

The registered hooks, applied to the kube-QoS dirs (:func:`plan_kube_qos`) and to running pods
(:func:`plan_pod`) at the levels each declares: each pod's spec becomes a :class:`HookRequest`
for the pod and for every container with a status, and the hook results become
``(relative cgroup dir, file, value)`` updates. The ``oom_score_adj`` update is virtual: it names
the container dir whose ``cgroup.procs`` pids get the value.

Host applications (NodeSLO ``spec.hostApplications``; upstream `host_app_reconciler.go`) get
the ``host_app`` function of every hook that has one, on their own cgroup dir: a non-empty
cpuset and the bvt value, as upstream's `HostAppContext` writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.extension.objects import KubeDict
from api.extension.qos import KubeQoSClass, get_kube_qos_class
from api.extension.resource import (
    ANNOTATION_EXTENDED_RESOURCE_SPEC,
    BATCH_CPU,
    BATCH_MEMORY,
    parse_extended_resource_spec,
)
from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.runtimehooks.hooks.hooks import Level
from koordlet.runtimehooks.protocol import (
    ContainerExtendedResources,
    HookRequest,
    HostAppRequest,
    Resources,
    extended_resources_from_spec,
    quantity_int,
)
from koordlet.runtimehooks.registry import RUNTIME_HOOKS
from koordlet.runtimehooks.rule import Rules
from koordlet.util.system.cgroup_driver import (
    CgroupDriver,
    container_relative_dir,
    kube_qos_relative_dir,
    pod_relative_dir,
)
from koordlet.util.system.host_app import host_app_relative_dir


@dataclass(slots=True, frozen=True)
class CgroupUpdate:
    """One cgroup file write, with the dir relative to the cgroup root (v1 subsystem implied
    by the file name)."""

    dir: str
    file: str
    value: str


def kube_qos_updates(qos_dir: str, res: Resources) -> list[CgroupUpdate]:
    """Kube-QoS-level writes: bvt."""
    if res.cpu_bvt is None:
        return []
    return [CgroupUpdate(qos_dir, "cpu.bvt_warp_ns", str(res.cpu_bvt))]


def plan_kube_qos(rules: Rules, driver: CgroupDriver) -> list[CgroupUpdate]:
    """The writes the hooks want on the three kube-QoS dirs (upstream's `kubeqos` level)."""
    updates: list[CgroupUpdate] = []
    for qos in KubeQoSClass:
        res = Resources()
        for hook in RUNTIME_HOOKS.values():
            if hook.kube_qos is not None and Level.KUBE_QOS in hook.levels:
                res.merge(hook.kube_qos(qos, rules))
        updates += kube_qos_updates(kube_qos_relative_dir(driver, qos), res)
    return updates


def pod_updates(pod_dir: str, res: Resources) -> list[CgroupUpdate]:
    """Pod-level writes: shares, quota, memory limit and bvt."""
    pairs = (("cpu.shares", res.cpu_shares), ("cpu.cfs_quota_us", res.cfs_quota),
             ("memory.limit_in_bytes", res.memory_limit), ("cpu.bvt_warp_ns", res.cpu_bvt))
    return [CgroupUpdate(pod_dir, file, str(v)) for file, v in pairs if v is not None]


def container_updates(container_dir: str, res: Resources) -> list[CgroupUpdate]:
    """Container-level writes; an empty cpuset means "do not change" and is skipped."""
    pairs: list[tuple[str, int | str | None]] = [
        ("cpu.shares", res.cpu_shares),
        ("cpuset.cpus", res.cpuset or None),
        ("cpu.cfs_quota_us", res.cfs_quota),
        ("memory.limit_in_bytes", res.memory_limit),
        ("oom_score_adj", res.oom_score_adj),
    ]
    return [CgroupUpdate(container_dir, file, str(v)) for file, v in pairs if v is not None]


def _extended_from_pod_spec(pod: KubeDict) -> dict[str, ContainerExtendedResources]:
    """Batch resources of spec.containers (init containers do not count); without any, the
    extended-resource-spec annotation."""
    out: dict[str, ContainerExtendedResources] = {}
    for container in pod.get("spec", {}).get("containers") or []:
        resources: Mapping[str, Any] = container.get("resources") or {}
        requests = {k: quantity_int(k, str(v)) for k, v in (resources.get("requests") or {}).items()
                    if k in (BATCH_CPU, BATCH_MEMORY)}
        raw_limits = resources.get("limits")
        limits = None if raw_limits is None else {
            k: quantity_int(k, str(v)) for k, v in raw_limits.items()
            if k in (BATCH_CPU, BATCH_MEMORY)}
        if requests or limits:
            out[container["name"]] = ContainerExtendedResources(requests, limits)
    if out:
        return out
    annotations = pod.get("metadata", {}).get("annotations") or {}
    return extended_resources_from_spec(
        ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec(annotations))


def _run(level: Level, req: HookRequest, rules: Rules) -> Resources:
    res = Resources()
    for hook in RUNTIME_HOOKS.values():
        if level in hook.levels:
            res.merge(hook.fn(req, rules))
    return res


def plan_pod(pod: KubeDict, rules: Rules, driver: CgroupDriver) -> list[CgroupUpdate]:
    """Every write the hooks want for one running pod: pod dir first, then its containers
    (kata pods' containers are skipped, as upstream). Malformed annotations raise
    MalformedValueError naming the key; an unknown container runtime ValueError."""
    meta = pod["metadata"]
    pod_dir = pod_relative_dir(driver, get_kube_qos_class(pod), meta["uid"])
    base = dict(
        pod_name=meta.get("name", ""), pod_namespace=meta.get("namespace", ""),
        pod_uid=meta["uid"], labels=meta.get("labels") or {},
        annotations=meta.get("annotations") or {}, cgroup_parent=pod_dir,
        extended_resources=_extended_from_pod_spec(pod))
    updates = pod_updates(pod_dir, _run(Level.POD, HookRequest(**base), rules))
    if pod.get("spec", {}).get("runtimeClassName") == "kata":
        return updates
    status = pod.get("status") or {}
    for cs in (status.get("containerStatuses") or []) + (status.get("initContainerStatuses")
                                                          or []):
        if not cs.get("containerID"):
            continue
        req = HookRequest(**base, container_name=cs["name"], container_id=cs["containerID"])
        updates += container_updates(container_relative_dir(driver, pod_dir, cs["containerID"]),
                                     _run(Level.CONTAINER, req, rules))
    return updates


def host_app_updates(app_dir: str, res: Resources) -> list[CgroupUpdate]:
    """Host-application writes (upstream `HostAppContext.injectFor*`): cpuset unless empty,
    then bvt."""
    pairs: list[tuple[str, int | str | None]] = [
        ("cpuset.cpus", res.cpuset or None), ("cpu.bvt_warp_ns", res.cpu_bvt)]
    return [CgroupUpdate(app_dir, file, str(v)) for file, v in pairs if v is not None]


def plan_host_app(app: HostApplicationSpec, rules: Rules,
                  driver: CgroupDriver) -> list[CgroupUpdate]:
    """Every write the hooks want for one host application. A cgroup dir outside the cgroup
    root raises MalformedValueError (statesinformer's view has already dropped such apps)."""
    app_dir = host_app_relative_dir(driver, app)
    req = HostAppRequest(app.name or "", app.qos or "", app_dir)
    res = Resources()
    for hook in RUNTIME_HOOKS.values():
        if hook.host_app is not None:
            res.merge(hook.host_app(req, rules))
    return host_app_updates(app_dir, res)
