"""The simulated metric source of ``--simulate-metrics`` (no upstream counterpart: it stands in
for ``pkg/koordlet/metricsadvisor/collectors/noderesource`` and ``podresource`` on the simulated
nodes of the local cluster, where no /proc or pod cgroups belong to the node).

``SimulatedCollector`` implements the metricsadvisor ``Collector`` and emits the same sample
kinds as the real collectors (node CPU/memory usage, pod CPU/memory usage, sys usage), plus the
node and pod ``*_with_page_cache`` kinds equal to the memory usage (no page cache is simulated,
so every NodeMetric memory collect policy reports), computed from annotations:

* pod ``sim.koordinator.sh/usage`` = ``{"cpu": V, "memory": V}`` and node
  ``sim.koordinator.sh/system-usage`` (same grammar, optional), where V is a quantity string
  (constant) or ``{"base", "peak", "periodSeconds", "peakAtSeconds", "epoch"}``:
  ``usage(now) = base + (peak − base) · (1 + cos(2π · (now − epoch − peakAt) / period)) / 2``;
* a pod's CPU is capped by the sum of its containers' CPU limits (``cpu`` or
  ``kubernetes.io/batch-cpu``) when every container has one;
* the BE pods' total CPU is capped by the BE cgroup's ``cfs_quota_us / cfs_period_us`` when
  the quota is positive, each BE pod scaled proportionally, so cpusuppress shows;
* only Running pods count; a malformed annotation (JSON nested beyond ``MAX_JSON_DEPTH``, a
  negative quantity or one a NodeMetric refuses, such as ``cpu: 1e30``) logs one warning naming
  the pod and counts as 0.

``SimulatedNodeInfoCollector`` stands in for the NodeInfoCollector: the node's CPU topology is
``status.capacity.cpu`` logical CPUs on one socket and one NUMA node, one CPU per core, one
LLC, and that NUMA node holds ``status.capacity.memory``, since no ``/sys`` belongs to the
simulated node (cpusuppress, the cpuset hooks and the NodeResourceTopology report need them).

Per tick the work is O(pods): annotations are parsed once per (pod, annotation value).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from api.core import quantity_value
from api.extension.codec import json_depth_error
from api.extension.qos import KubeQoSClass, QoSClass, get_pod_qos_class_with_default
from api.extension.resource import BATCH_CPU
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.nodeinfo import CPUTopology, NUMAInfo, ProcessorInfo
from koordlet.util.system.cgroup import CgroupError, cgroup_file_read
from koordlet.util.system.cgroup_env import CgroupEnv
from pkg.util.podresources import CPU, MEMORY, measured_quantity_int, quantity_int

log = logging.getLogger(__name__)

ANNOTATION_USAGE = "sim.koordinator.sh/usage"
ANNOTATION_SYSTEM_USAGE = "sim.koordinator.sh/system-usage"


class UsageError(ValueError):
    """A usage annotation that does not follow the grammar."""


@dataclass(slots=True, frozen=True)
class Curve:
    """A diurnal usage curve (constant when base == peak); CPU in cores, memory in bytes."""

    base: float
    peak: float
    period_seconds: float = 86400.0
    peak_at_seconds: float = 0.0
    epoch: float = 0.0

    def at(self, now: float) -> float:
        if self.peak == self.base:
            return self.base
        phase = 2 * math.pi * (now - self.epoch - self.peak_at_seconds) / self.period_seconds
        return self.base + (self.peak - self.base) * (1 + math.cos(phase)) / 2


ZERO = Curve(0.0, 0.0)


def _quantity(resource: str, where: str, value: Any) -> float:
    text = value if isinstance(value, str) else str(value)
    try:
        q = float(quantity_value(text))
    except (ValueError, ArithmeticError) as e:
        raise UsageError(f"{where}: {value!r} is not a quantity ({e})") from None
    if q < 0:
        raise UsageError(f"{where}: {value!r} is negative")
    try:
        # koordlet would report it in a NodeMetric, whose model refuses beyond-int64 usage.
        measured_quantity_int(resource, text)
    except ValueError as e:
        raise UsageError(f"{where}: {e}") from None
    return q


def parse_curve(resource: str, value: Any) -> Curve:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        q = _quantity(resource, resource, value)
        return Curve(q, q)
    if not isinstance(value, dict) or "base" not in value or "peak" not in value:
        raise UsageError(f"{resource}: want a quantity or an object with base and peak")
    try:
        period = float(value.get("periodSeconds", 86400))
        peak_at = float(value.get("peakAtSeconds", 0))
        epoch = float(value.get("epoch", 0))
    except (TypeError, ValueError):
        raise UsageError(f"{resource}: periodSeconds, peakAtSeconds and epoch must be "
                         "numbers") from None
    if period <= 0:
        raise UsageError(f"{resource}: periodSeconds must be > 0")
    return Curve(_quantity(resource, f"{resource}.base", value["base"]),
                 _quantity(resource, f"{resource}.peak", value["peak"]), period, peak_at, epoch)


def parse_usage(raw: str | None) -> tuple[Curve, Curve]:
    """(cpu, memory) curves of an annotation value; missing keys are 0."""
    if not raw:
        return ZERO, ZERO
    too_deep = json_depth_error(raw)
    if too_deep is not None:
        raise UsageError(f"not JSON: {too_deep}")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        raise UsageError(f"not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise UsageError("want a JSON object with cpu and/or memory")
    cpu = parse_curve(CPU, obj[CPU]) if CPU in obj else ZERO
    memory = parse_curve(MEMORY, obj[MEMORY]) if MEMORY in obj else ZERO
    return cpu, memory


def cpu_limit_cores(pod: Mapping[str, Any]) -> float | None:
    """Σ containers' ``cpu`` (else ``kubernetes.io/batch-cpu``) limits in cores, or None when
    some container has neither."""
    total = 0
    containers = (pod.get("spec") or {}).get("containers") or []
    for c in containers:
        limits = (c.get("resources") or {}).get("limits") or {}
        if CPU in limits:
            total += quantity_int(CPU, limits[CPU])
        elif BATCH_CPU in limits:
            total += quantity_int(BATCH_CPU, limits[BATCH_CPU])
        else:
            return None
    return total / 1000 if containers else None


def be_quota_cores(quota_us: int, period_us: int) -> float | None:
    """The BE cgroup's CPU cap in cores; None when unlimited (quota ≤ 0)."""
    if quota_us <= 0 or period_us <= 0:
        return None
    return quota_us / period_us


def cap_be(usage: dict[str, float], cap: float | None) -> dict[str, float]:
    """Scales the BE pods' usages proportionally so their sum is at most ``cap``."""
    total = sum(usage.values())
    if cap is None or total <= cap:
        return usage
    scale = cap / total
    return {uid: u * scale for uid, u in usage.items()}


@dataclass(slots=True)
class _PodModel:
    """One pod's parsed annotation and limit, rebuilt when the annotation changes."""

    raw: str | None
    cpu: Curve
    memory: Curve
    limit_cores: float | None
    be: bool


class SimulatedCollector:
    name = "SimulatedResourceCollector"

    def __init__(self, pods: Callable[[], list[dict[str, Any]]],
                 node: Callable[[], dict[str, Any] | None],
                 be_quota: Callable[[], float | None]) -> None:
        """``be_quota`` returns the BE cgroup's cap in cores (None: unlimited)."""
        self.pods = pods
        self.node = node
        self.be_quota = be_quota
        self._models: dict[str, _PodModel] = {}
        self._system: tuple[str | None, Curve, Curve] = (None, ZERO, ZERO)

    def _model(self, pod: dict[str, Any]) -> _PodModel:
        meta = pod.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(ANNOTATION_USAGE)
        model = self._models.get(meta.get("uid", ""))
        if model is not None and model.raw == raw:
            return model
        try:
            cpu, memory = parse_usage(raw)
        except UsageError as e:
            log.warning("pod %s/%s: annotation %s is malformed, counting 0: %s",
                        meta.get("namespace"), meta.get("name"), ANNOTATION_USAGE, e)
            cpu, memory = ZERO, ZERO
        model = _PodModel(raw, cpu, memory, cpu_limit_cores(pod),
                          get_pod_qos_class_with_default(pod) is QoSClass.BE)
        self._models[meta.get("uid", "")] = model
        return model

    def _system_curves(self) -> tuple[Curve, Curve]:
        node = self.node() or {}
        meta = node.get("metadata") or {}
        raw = (meta.get("annotations") or {}).get(ANNOTATION_SYSTEM_USAGE)
        if raw != self._system[0]:
            try:
                cpu, memory = parse_usage(raw)
            except UsageError as e:
                log.warning("node %s: annotation %s is malformed, counting 0: %s",
                            meta.get("name"), ANNOTATION_SYSTEM_USAGE, e)
                cpu, memory = ZERO, ZERO
            self._system = (raw, cpu, memory)
        return self._system[1], self._system[2]

    def collect(self, now: float) -> list[MetricSample]:
        cpu: dict[str, float] = {}
        be_cpu: dict[str, float] = {}
        memory: dict[str, float] = {}
        seen = set()
        for pod in self.pods():
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            uid = pod["metadata"].get("uid", "")
            seen.add(uid)
            m = self._model(pod)
            c = m.cpu.at(now)
            if m.limit_cores is not None:
                c = min(c, m.limit_cores)
            (be_cpu if m.be else cpu)[uid] = c
            memory[uid] = m.memory.at(now)
        if be_cpu:
            cpu.update(cap_be(be_cpu, self.be_quota()))
        for uid in self._models.keys() - seen:
            del self._models[uid]
        sys_cpu, sys_memory = (c.at(now) for c in self._system_curves())
        node_cpu = sys_cpu + sum(cpu.values())
        node_memory = sys_memory + sum(memory.values())
        samples = [
            MetricSample(mt.NODE_CPU_USAGE, {}, now, node_cpu),
            MetricSample(mt.NODE_MEMORY_USAGE, {}, now, node_memory),
            MetricSample(mt.NODE_MEMORY_USAGE_WITH_PAGE_CACHE, {}, now, node_memory),
            MetricSample(mt.SYS_CPU_USAGE, {}, now, sys_cpu),
            MetricSample(mt.SYS_MEMORY_USAGE, {}, now, sys_memory),
        ]
        for uid, value in cpu.items():
            props = {mt.POD_UID: uid}
            samples += [
                MetricSample(mt.POD_CPU_USAGE, props, now, value),
                MetricSample(mt.POD_MEMORY_USAGE, props, now, memory[uid]),
                MetricSample(mt.POD_MEMORY_USAGE_WITH_PAGE_CACHE, props, now, memory[uid]),
            ]
        return samples


def capacity_cores(node: Mapping[str, Any] | None) -> int | None:
    """The node's ``status.capacity.cpu`` in whole cores (at least 1); None when it has none."""
    capacity = ((node or {}).get("status") or {}).get("capacity") or {}
    if CPU not in capacity:
        return None
    return max(quantity_int(CPU, capacity[CPU]) // 1000, 1)


def node_cpu_cores(node: Mapping[str, Any] | None) -> int:
    """The simulated node's capacity in whole cores (at least 1), else this machine's."""
    return capacity_cores(node) or os.cpu_count() or 1


def be_quota_reader(env: CgroupEnv) -> float | None:
    """The BE cgroup's CPU cap in cores, for ``SimulatedCollector`` (None: unlimited)."""
    be_dir = env.kube_qos_dir(KubeQoSClass.BEST_EFFORT)
    try:
        quota = int(cgroup_file_read(env.path("cpu.cfs_quota_us", be_dir)))
        period = int(cgroup_file_read(env.path("cpu.cfs_period_us", be_dir)))
    except (CgroupError, ValueError) as e:
        log.debug("no BE cfs quota: %s", e)
        return None
    return be_quota_cores(quota, period)


def simulated_topology(cpus: int) -> CPUTopology:
    return CPUTopology([ProcessorInfo(cpu_id=i, core_id=i, socket_id=0, node_id=0,
                                      l1dl1il2=str(i), l3=0) for i in range(cpus)])


class SimulatedNodeInfoCollector:
    """Writes the simulated CPU topology to the cache's KV (as NodeInfoCollector does)."""

    name = "SimulatedNodeInfoCollector"

    def __init__(self, cache: MetricCache, node: Callable[[], dict[str, Any] | None]) -> None:
        self.cache = cache
        self.node = node

    def collect(self, now: float) -> list[MetricSample]:
        node = self.node()
        cpus = capacity_cores(node)
        if cpus is None:
            return []  # the node is not known yet: the next round tries again
        self.cache.set(mt.NODE_CPU_INFO_KEY, simulated_topology(cpus))
        capacity = ((node or {}).get("status") or {}).get("capacity") or {}
        memory = quantity_int(MEMORY, capacity[MEMORY]) if MEMORY in capacity else 0
        self.cache.set(mt.NODE_NUMA_INFO_KEY, [NUMAInfo(0, memory)])
        return []
