"""cpusuppress: upstream `pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go`.

Every `--cpu-suppress-interval-seconds` the BE allowance is computed from NodeSLO's
`resourceUsedThresholdWithBE` and the last node, pod and host-application CPU usage
(`calculateBESuppressCPU`), and applied to the node-level BE cgroup, the BestEffort kube-QoS dir
(`GetPodQoSRelativePath(BestEffort)` of `pkg/koordlet/util/cgroup_parent_utils.go`), with one of
two policies, the other one being recovered:

* `cfsQuota`: the quota drops at once and grows back by at most 10 % of the node per round;
* `cpuset` (the default): BE pods get `max(ceil(allowance), 2)` CPUs chosen by
  `cpuset_policy`, avoiding reserved, exclusive system-QoS and LSE CPUs and taking from the
  CPUs of LSR pods in proportion; written into the BE dir, its pods and their containers
  (parents widened before children, children narrowed before parents).

When suppression is disabled the quota is recovered to −1 once and the cpusets to the full BE
cpuset. Upstream's kubelet-static-CPU-manager variant (only container dirs narrowed) is not
implemented: the NodeResourceTopology annotation it keys on is not read here.

A malformed ``node.koordinator.sh/reservation`` or ``system-qos-resource`` node annotation (or
pod ``resource-status``) counts as absent and is reported once per value
(``AnnotationWarnings``): it made every round throw, leaving suppression off on the node.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from api.errors import MalformedValueError
from api.extension.node import (
    ANNOTATION_NODE_RESERVATION,
    ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
    NodeReservation,
    SystemQOSResource,
    parse_node_reservation,
    parse_system_qos_resource,
)
from api.extension.numa import ANNOTATION_RESOURCE_STATUS, parse_resource_status
from api.extension.qos import KubeQoSClass, QoSClass, get_kube_qos_class, get_pod_qos_class_raw
from api.slo.v1alpha1.host_application import CgroupBaseType
from api.slo.v1alpha1.strategies import CPUSuppressPolicy, ResourceThresholdStrategy
from koordlet.audit import auditor as audit
from koordlet.metriccache import metric_types as mt
from koordlet.metrics.metrics import record_be_suppress_cpu_cores
from koordlet.metricsadvisor.nodeinfo import ProcessorInfo
from koordlet.qosmanager.cpuset_policy import be_cpuset_size, select_be_cpus
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import AnnotationWarnings, pod_uid
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.resourceexecutor.updater import new_cgroup_updater
from koordlet.util.system.cgroup import CgroupError
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.cpuset import format_cpuset, parse_cpuset
from pkg.features.koordlet_features import BE_CPU_SUPPRESS
from pkg.util.podresources import quantity_int

logger = logging.getLogger(__name__)

CFS_BASE_PERIOD = 100000
# The quota never goes below 2 ms per period, so BE pods keep making progress.
CFS_QUOTA_MIN_VALUE = 2000
# Skip a write smaller than 1 % of the node; grow by at most 10 % of the node per round.
CFS_QUOTA_DELTA_RATIO = 0.01
CFS_QUOTA_SCALE_UP_RATIO = 0.1


@dataclass(slots=True)
class SuppressInputs:
    """The figures of upstream's `calculateBESuppressCPU`, all in millicores."""

    capacity_milli: int
    reserved_milli: int
    node_used_milli: int
    pods_all_milli: int
    pods_non_be_milli: int
    host_all_milli: int
    host_non_be_milli: int

    def system_milli(self) -> int:
        used = self.node_used_milli - self.pods_all_milli - self.host_all_milli
        return max(used, 0, self.reserved_milli)


def calculate_be_suppress_cpu(inputs: SuppressInputs, strategy: ResourceThresholdStrategy) -> int:
    """Upstream `calculateBESuppressCPU`: the BE allowance in millicores."""
    threshold = strategy.cpu_suppress_threshold_percent or 0
    suppress = (
        inputs.capacity_milli * threshold // 100
        - inputs.pods_non_be_milli
        - inputs.host_non_be_milli
        - inputs.system_milli()
    )
    if strategy.cpu_suppress_min_percent is not None:
        suppress = max(suppress, inputs.capacity_milli * strategy.cpu_suppress_min_percent // 100)
    return suppress


def is_be_pod(pod: KubeDict) -> bool:
    """BE for suppression: labelled BE or kube-BestEffort (a batch pod without the label)."""
    return (
        get_pod_qos_class_raw(pod) is QoSClass.BE
        or get_kube_qos_class(pod) == KubeQoSClass.BEST_EFFORT
    )


def pods_used_milli(usage: Mapping[str, int], pods: Iterable[KubeDict]) -> tuple[int, int]:
    """(all, non-BE) usage of the pods in ``usage`` (pod UID → millicores), as upstream's
    `CalculateFilterPodsUsed`: a UID missing from ``pods`` (a dangling pod, deleted since its
    usage was read) still ran, and counts as non-BE."""
    be = {uid for pod in pods if is_be_pod(pod) and (uid := pod_uid(pod))}
    return sum(usage.values()), sum(used for uid, used in usage.items() if uid not in be)


def reserved_cpu_milli(node: KubeDict, reservation: NodeReservation) -> int:
    """max(capacity − allocatable, the node's reservation cpu), floor 0."""
    status = node.get("status") or {}
    capacity = (status.get("capacity") or {}).get("cpu", 0)
    allocatable = (status.get("allocatable") or {}).get("cpu", capacity)
    reserved = max(quantity_int("cpu", capacity) - quantity_int("cpu", allocatable), 0)
    resources = reservation.resources or {}
    if "cpu" in resources:
        reserved = max(reserved, quantity_int("cpu", resources["cpu"]))
    return reserved


class CPUSuppress:
    name = "CPUSuppresss"  # sic: upstream's strategy name has three s

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.reader = CgroupReader.for_env(ctx.env)
        # Recovery writes −1 once per switch away from cfsQuota (upstream's
        # suppressPolicyStatuses); it starts False so a fresh koordlet recovers once.
        self._quota_recovered = False
        self.warnings = AnnotationWarnings(ctx, "cpusuppress")

    def enabled(self) -> bool:
        return self.ctx.feature_gate.enabled(BE_CPU_SUPPRESS)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.cpu_suppress_interval_seconds)

    def run_once(self) -> None:
        slo = self.ctx.states.get_node_slo()
        if slo is None:
            return
        strategy = slo.spec.resource_used_threshold_with_be
        if strategy is None or strategy.enable is not True:
            self.recover_cfs_quota()
            self.recover_cpuset()
            return
        inputs = self.collect_inputs()
        if inputs is None:
            return
        suppress_milli = calculate_be_suppress_cpu(inputs, strategy)
        if strategy.cpu_suppress_policy == CPUSuppressPolicy.CFS_QUOTA:
            self.adjust_by_cfs_quota(suppress_milli, inputs.capacity_milli)
            self.recover_cpuset()
        else:
            self.adjust_by_cpuset(suppress_milli)
            self.recover_cfs_quota()

    def collect_inputs(self) -> SuppressInputs | None:
        node = self.ctx.states.get_node()
        cpu_info = self.ctx.metric_cache.get(mt.NODE_CPU_INFO_KEY)
        if node is None or cpu_info is None:
            return None
        now = self.ctx.clock.now()
        start = now - 2 * self.ctx.collect_res_used_interval_seconds
        node_used = self._last(mt.NODE_CPU_USAGE, {}, start, now)
        if node_used is None:
            return None
        usage: dict[str, int] = {}
        for pod in self.ctx.states.get_all_pods():
            uid = pod_uid(pod)
            if (used := self._last(mt.POD_CPU_USAGE, {mt.POD_UID: uid}, start, now)) is not None:
                usage[uid] = used
        # Classified against the pod list as it is now, as upstream lists the pods twice: one
        # deleted in between is dangling and counts as non-BE.
        pods_all, pods_non_be = pods_used_milli(usage, self.ctx.states.get_all_pods())
        host_all = host_non_be = 0
        slo = self.ctx.states.get_node_slo()
        for app in (slo.spec.host_applications if slo else None) or []:
            props = {mt.HOST_APP_NAME: app.name or ""}  # Go's zero value for a nameless app
            used = self._last(mt.HOST_APPLICATION_CPU_USAGE, props, start, now)
            if used is None:
                continue
            host_all += used
            base = app.cgroup_path.base if app.cgroup_path else None
            if not (app.qos == QoSClass.BE and base == CgroupBaseType.KUBEPODS_BESTEFFORT):
                host_non_be += used
        capacity = ((node.get("status") or {}).get("capacity") or {}).get("cpu", 0)
        return SuppressInputs(
            capacity_milli=quantity_int("cpu", capacity),
            reserved_milli=reserved_cpu_milli(node, self.node_reservation(node)),
            node_used_milli=node_used,
            pods_all_milli=pods_all,
            pods_non_be_milli=pods_non_be,
            host_all_milli=host_all,
            host_non_be_milli=host_non_be,
        )

    def _last(self, kind: str, props: dict[str, str], start: float, end: float) -> int | None:
        """The last value in the window, truncated to millicores (None when no point)."""
        result = self.ctx.metric_cache.query(kind, props, start, end)
        if result.count() == 0:
            return None
        return int(result.value("last") * 1000)

    def adjust_by_cfs_quota(self, suppress_milli: int, capacity_milli: int) -> None:
        """Upstream `adjustByCfsQuota`, on the BE dir's `cpu.cfs_quota_us`."""
        be_dir = self.ctx.env.be_dir()
        node_quota = capacity_milli // 1000 * CFS_BASE_PERIOD
        new = max(suppress_milli * CFS_BASE_PERIOD // 1000, CFS_QUOTA_MIN_VALUE)
        try:
            cur = self.reader.read_cpu_quota(be_dir)
        except (CgroupError, OSError, ValueError) as e:
            logger.warning("cpusuppress: cannot read BE quota: %s", e)
            return
        if abs(new - cur) < node_quota * CFS_QUOTA_DELTA_RATIO and new != CFS_QUOTA_MIN_VALUE:
            return
        if cur != -1 and new - cur > node_quota * CFS_QUOTA_SCALE_UP_RATIO:
            new = cur + int(node_quota * CFS_QUOTA_SCALE_UP_RATIO)
        updater = new_cgroup_updater(self.ctx.env, "cpu.cfs_quota_us", be_dir, new)
        try:
            self.ctx.executor.update(False, updater)
        except CgroupError as e:
            logger.warning("cpusuppress: %s", e)
            return
        self._quota_recovered = False
        record_be_suppress_cpu_cores("cfsQuota", new / CFS_BASE_PERIOD)
        audit.event(1, audit.ADJUST_BE_BY_NODE_CPU_USAGE,
                    f"update BE group to cfs_quota: {new}")
        logger.info("cpusuppress: BE cfs quota %d -> %d", cur, new)

    def recover_cfs_quota(self) -> None:
        if self._quota_recovered:
            return
        updater = new_cgroup_updater(self.ctx.env, "cpu.cfs_quota_us", self.ctx.env.be_dir(), -1)
        try:
            self.ctx.executor.update(False, updater)
        except CgroupError as e:
            logger.warning("cpusuppress: recover quota: %s", e)
            return
        self._quota_recovered = True

    def node_reservation(self, node: KubeDict) -> NodeReservation:
        """The node's reservation; a malformed one (reservedCPUs included) counts as none."""
        annotations = (node.get("metadata") or {}).get("annotations")
        try:
            reservation = parse_node_reservation(annotations)
            try:
                parse_cpuset(reservation.reserved_cpus or "")
            except ValueError as e:
                raise MalformedValueError(ANNOTATION_NODE_RESERVATION,
                                          f"reservedCPUs: {e}") from None
        except MalformedValueError as e:
            self.warnings.report(node, "Node", e)
            return NodeReservation()
        return reservation

    def system_qos_resource(self, node: KubeDict) -> SystemQOSResource | None:
        """The node's system-QoS resource; a malformed one (cpuset included) counts as none."""
        annotations = (node.get("metadata") or {}).get("annotations")
        try:
            resource = parse_system_qos_resource(annotations)
            if resource is not None and resource.is_cpuset_exclusive:
                try:
                    parse_cpuset(resource.cpuset)
                except ValueError as e:
                    raise MalformedValueError(ANNOTATION_NODE_SYSTEM_QOS_RESOURCE,
                                              f"cpuset: {e}") from None
        except MalformedValueError as e:
            self.warnings.report(node, "Node", e)
            return None
        return resource

    def _pod_cpus(self, qos: QoSClass) -> frozenset[int]:
        """CPUs bound to pods of `qos` (their `resource-status` cpuset)."""
        cpus: set[int] = set()
        for pod in self.ctx.states.get_all_pods():
            if get_pod_qos_class_raw(pod) is not qos:
                continue
            md = pod.get("metadata") or {}
            try:
                status = parse_resource_status(md.get("annotations"))
                try:
                    cpus |= parse_cpuset(status.cpuset)
                except ValueError as e:
                    raise MalformedValueError(ANNOTATION_RESOURCE_STATUS,
                                              f"cpuset: {e}") from None
            except MalformedValueError as e:
                self.warnings.report(pod, "Pod", e)
        return frozenset(cpus)

    def candidate_processors(self) -> list[ProcessorInfo] | None:
        """All processors minus reserved CPUs, the exclusive system-QoS cpuset and LSE CPUs."""
        cpu_info = self.ctx.metric_cache.get(mt.NODE_CPU_INFO_KEY)
        node = self.ctx.states.get_node()
        if cpu_info is None or node is None:
            return None
        excluded = set(parse_cpuset(self.node_reservation(node).reserved_cpus or ""))
        system_qos = self.system_qos_resource(node)
        if system_qos is not None and system_qos.is_cpuset_exclusive:
            excluded |= parse_cpuset(system_qos.cpuset)
        excluded |= self._pod_cpus(QoSClass.LSE)
        return [p for p in cpu_info.processors if p.cpu_id not in excluded]

    def full_be_cpuset(self) -> frozenset[int] | None:
        processors = self.candidate_processors()
        return None if processors is None else frozenset(p.cpu_id for p in processors)

    def adjust_by_cpuset(self, suppress_milli: int) -> None:
        """Upstream `adjustByCPUSet`: the BE cpuset of `max(ceil(allowance), 2)` CPUs."""
        processors = self.candidate_processors()
        cpu_info = self.ctx.metric_cache.get(mt.NODE_CPU_INFO_KEY)
        if not processors or cpu_info is None:
            return
        try:
            old = self.reader.read_cpuset_cpus(self.ctx.env.be_dir())
        except (CgroupError, OSError, ValueError) as e:
            logger.warning("cpusuppress: cannot read BE cpuset: %s", e)
            return
        size = be_cpuset_size(suppress_milli, len(old), len(cpu_info.processors))
        lsr_cpus = self._pod_cpus(QoSClass.LSR)
        lsr = [p for p in processors if p.cpu_id in lsr_cpus]
        ls = [p for p in processors if p.cpu_id not in lsr_cpus]
        lsr_num = size * len(lsr) // (len(lsr) + len(ls))
        target = select_be_cpus(lsr_num, lsr) + select_be_cpus(size - lsr_num, ls)
        if len(target) < size:
            logger.warning("cpusuppress: %d BE CPUs needed, not enough candidates", size)
            return
        self.write_be_cpuset(frozenset(target))
        record_be_suppress_cpu_cores("cpuset", len(target))
        audit.event(1, audit.ADJUST_BE_BY_NODE_CPU_USAGE,
                    f"update BE group to cpuset: [{' '.join(map(str, target))}]")
        if frozenset(target) != old:
            logger.info("cpusuppress: BE cpuset %s -> %s", format_cpuset(old),
                        format_cpuset(frozenset(target)))

    def recover_cpuset(self) -> None:
        cpus = self.full_be_cpuset()
        if cpus:
            self.write_be_cpuset(cpus)

    def write_be_cpuset(self, cpus: frozenset[int]) -> None:
        """BE dir, its pod dirs and their container dirs: the union top-down, then `cpus`
        bottom-up, so no child is ever wider than its parent."""
        env, value = self.ctx.env, format_cpuset(cpus)
        be_dir = env.be_dir()
        pods = _subdirs(env, be_dir)
        containers = [c for p in pods for c in _subdirs(env, p)]
        levels = [
            [new_cgroup_updater(env, "cpuset.cpus", d, value) for d in level]
            for level in ([be_dir], pods, containers)
        ]
        self.ctx.executor.leveled_update_batch(levels)


def _subdirs(env: CgroupEnv, parent_dir: str) -> list[str]:
    base = env.dir_path(env.resource("cpuset.cpus"), parent_dir)
    try:
        names = sorted(e.name for e in os.scandir(base) if e.is_dir())
    except OSError:
        return []
    return [os.path.join(parent_dir, n) for n in names]
