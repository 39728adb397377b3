"""cpuburst: upstream `pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go`.

For LS-like pods (raw QoS not LSR, LSE or BE), from NodeSLO `cpuBurstStrategy` overlaid by the
pod annotation `koordinator.sh/cpuBurst`:

* static burst (`cpuBurstOnly`, `auto`): `cpu.cfs_burst_us` = limit × cpuBurstPercent % of a
  100 ms period per container, their sum on the pod; 0 under the other policies. A kernel
  without the file is skipped (the executor treats it as unsupported);
* dynamic quota (`cfsQuotaBurstOnly`, `auto`): a throttled container's `cpu.cfs_quota_us` grows
  by 20 % per round up to cfsQuotaBurstPercent % of its limit, shrinks by 20 % when the node's
  share pool is overloaded (or its burst budget is spent), and goes back to the limit under the
  other policies. The pod dir's quota moves by the same delta, widened before and narrowed
  after the container's.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from enum import Enum

from api.errors import MalformedValueError
from api.extension.pod_qos import parse_pod_cpu_burst
from api.extension.qos import QoSClass, get_kube_qos_class, get_pod_qos_class_raw
from api.slo.v1alpha1.defaults import default_cpu_burst_strategy
from api.slo.v1alpha1.strategies import CPUBurstPolicy, CPUBurstStrategy
from koordlet.metriccache import metric_types as mt
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import AnnotationWarnings, avg_over, last_value, pod_uid
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.resourceexecutor.updater import new_cgroup_updater
from koordlet.util.system.cgroup import (
    CFS_BASE_PERIOD,
    CgroupError,
    MalformedCgroupFileError,
    milli_cpu_to_quota,
)
from pkg.features.koordlet_features import CPU_BURST
from pkg.util.podresources import pod_requests, quantity_int

logger = logging.getLogger(__name__)

SCALE_UP_RATIO = 1.2
SCALE_DOWN_RATIO = 0.8
COOLING_RATIO = 0.9
NODE_WINDOW_MAX_SECONDS = 10.0
# Token bucket of the limiter: usage at or over the limit spends, under 60 % saves.
LIMITER_SAVE_BELOW_PERCENT = 60


class NodeState(Enum):
    OVERLOAD = "overload"
    COOLING = "cooling"
    IDLE = "idle"
    UNKNOWN = "unknown"


class Operation(Enum):
    UP = "scaleUp"
    DOWN = "scaleDown"
    REMAIN = "remain"
    RESET = "resetToBase"


def static_burst_us(limit_milli: int, burst_percent: int) -> int:
    return int(limit_milli / 1000 * (burst_percent / 100) * CFS_BASE_PERIOD)


def node_override(op: Operation, state: NodeState) -> Operation:
    if state is NodeState.OVERLOAD and op in (Operation.UP, Operation.REMAIN):
        return Operation.DOWN
    if state in (NodeState.COOLING, NodeState.UNKNOWN) and op is Operation.UP:
        return Operation.REMAIN
    return op


def target_quota(op: Operation, cur: int, base: int, burst_percent: int) -> int:
    target = {Operation.UP: int(cur * SCALE_UP_RATIO), Operation.DOWN: int(cur * SCALE_DOWN_RATIO),
              Operation.REMAIN: cur, Operation.RESET: base}[op]
    ceil = int(base * burst_percent / 100) if burst_percent > 100 else base
    return min(max(target, base), ceil)


@dataclass(slots=True)
class BurstLimiter:
    """Upstream's per-container budget of time spent over the limit."""

    capacity: float
    tokens: float
    last: float

    def allow(self, now: float, usage_percent: float) -> bool:
        elapsed = int(now - self.last)  # whole seconds, as upstream
        if usage_percent >= 100:
            self.tokens -= (usage_percent - 100) * elapsed
        elif usage_percent < LIMITER_SAVE_BELOW_PERCENT:
            self.tokens += (100 - usage_percent) * elapsed
        self.tokens = min(max(self.tokens, -self.capacity), self.capacity)
        self.last = now
        return self.tokens > 0


def merged_config(node_cfg: CPUBurstStrategy, pod: KubeDict,
                  warnings: AnnotationWarnings) -> CPUBurstStrategy:
    """NodeSLO config overlaid by the pod annotation; a malformed one is ignored and reported
    once per value."""
    md = pod.get("metadata") or {}
    try:
        override = parse_pod_cpu_burst(md.get("annotations"))
    except MalformedValueError as e:
        warnings.report(pod, "Pod", e)
        return node_cfg
    if override is None:
        return node_cfg
    fields = {k: v for k, v in override.model_dump().items() if v not in (None, "")}
    return node_cfg.model_copy(update=fields)


def _with_defaults(strategy: CPUBurstStrategy | None) -> CPUBurstStrategy:
    default = default_cpu_burst_strategy()
    if strategy is None:
        return default
    return default.model_copy(update=strategy.model_dump(exclude_none=True))


class CPUBurst:
    name = "CPUBurst"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.reader = CgroupReader.for_env(ctx.env)
        self.limiters: dict[str, BurstLimiter] = {}  # container id → limiter
        self.warnings = AnnotationWarnings(ctx, "cpuburst")

    def enabled(self) -> bool:
        config = self.ctx.config
        return self.ctx.feature_gate.enabled(CPU_BURST) and config.reconcile_interval_seconds > 0

    def interval_seconds(self) -> float:
        return float(self.ctx.config.reconcile_interval_seconds)

    def run_once(self) -> None:
        slo = self.ctx.states.get_node_slo()
        if slo is None:
            return
        node_cfg = _with_defaults(slo.spec.cpu_burst_strategy)
        pods = self.ctx.states.get_all_pods()
        state = self.node_state(node_cfg, pods)
        for pod in pods:
            if get_pod_qos_class_raw(pod) in (QoSClass.LSR, QoSClass.LSE, QoSClass.BE):
                continue
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            cfg = merged_config(node_cfg, pod, self.warnings)
            self.apply_static_burst(pod, cfg)
            self.apply_quota_burst(pod, cfg, state)
        self._gc_limiters(node_cfg)

    def node_state(self, cfg: CPUBurstStrategy, pods: list[KubeDict]) -> NodeState:
        window = min(5 * self.interval_seconds(), NODE_WINDOW_MAX_SECONDS)
        node = avg_over(self.ctx, mt.NODE_CPU_USAGE, {}, window)
        cpu_info = self.ctx.metric_cache.get(mt.NODE_CPU_INFO_KEY)
        if node.count == 0 or cpu_info is None:
            return NodeState.UNKNOWN
        total = float(len(cpu_info.processors))
        usage = node.value
        for pod in pods:
            qos = get_pod_qos_class_raw(pod)
            if qos in (QoSClass.LSR, QoSClass.LSE):
                try:
                    total -= pod_requests(pod).get("cpu", 0) / 1000
                except ValueError as e:
                    logger.warning("cpuburst: pod %s has a malformed request: %s", pod_uid(pod), e)
            if qos in (QoSClass.LSR, QoSClass.LSE, QoSClass.BE):
                usage -= avg_over(self.ctx, mt.POD_CPU_USAGE, {mt.POD_UID: pod_uid(pod)},
                                  window).value
        ratio = usage / total if total > 0 else 1.0
        threshold = (cfg.share_pool_threshold_percent or 0) / 100
        if ratio >= threshold:
            return NodeState.OVERLOAD
        if ratio >= COOLING_RATIO * threshold:
            return NodeState.COOLING
        return NodeState.IDLE

    def _containers(self, pod: KubeDict) -> list[tuple[str, str, int]]:
        """(container id, container dir, CPU limit in milli) of the pod's started containers."""
        limits = {}
        for c in (pod.get("spec") or {}).get("containers") or []:
            raw = ((c.get("resources") or {}).get("limits") or {}).get("cpu")
            try:
                limits[c.get("name")] = quantity_int("cpu", raw) if raw is not None else 0
            except ValueError:
                logger.warning("cpuburst: pod %s container %s has a malformed cpu limit %r",
                               pod_uid(pod), c.get("name"), raw)
        pod_dir = self._pod_dir(pod)
        out = []
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            cid = status.get("containerID")
            if cid:
                out.append((cid, self.ctx.env.container_dir(pod_dir, cid),
                            limits.get(status.get("name"), 0)))
        return out

    def _pod_dir(self, pod: KubeDict) -> str:
        return self.ctx.env.pod_dir(get_kube_qos_class(pod), pod_uid(pod))

    def apply_static_burst(self, pod: KubeDict, cfg: CPUBurstStrategy) -> None:
        on = cfg.policy in (CPUBurstPolicy.CPU_BURST_ONLY, CPUBurstPolicy.AUTO)
        percent = cfg.cpu_burst_percent or 0
        total = 0
        updaters = []
        for _, cdir, limit in self._containers(pod):
            value = static_burst_us(limit, percent) if on and limit > 0 else 0
            total += value
            updaters.append(new_cgroup_updater(self.ctx.env, "cpu.cfs_burst_us", cdir, value))
        pod_updater = new_cgroup_updater(self.ctx.env, "cpu.cfs_burst_us", self._pod_dir(pod),
                                         total)
        # the pod's burst covers its containers': raise it first, lower it last
        order = [pod_updater, *updaters] if on else [*updaters, pod_updater]
        self.ctx.executor.update_batch(True, order)

    def apply_quota_burst(self, pod: KubeDict, cfg: CPUBurstStrategy, state: NodeState) -> None:
        dynamic = cfg.policy in (CPUBurstPolicy.CFS_QUOTA_BURST_ONLY, CPUBurstPolicy.AUTO)
        percent = cfg.cfs_quota_burst_percent or 0
        now = self.ctx.clock.now()
        for cid, cdir, limit in self._containers(pod):
            if limit <= 0:
                continue
            base = milli_cpu_to_quota(limit)
            try:
                cur = self.reader.read_cpu_quota(cdir)
            except MalformedCgroupFileError as e:
                logger.warning("cpuburst: skip container %s: %s", cid, e)
                continue
            except (CgroupError, OSError):
                continue  # container gone or not started yet
            if cur <= 0:
                continue
            if not dynamic:
                op = Operation.RESET
            elif not self._allowed(cid, cfg, limit, now):
                op = Operation.DOWN
            else:
                throttled = last_value(self.ctx, mt.CONTAINER_CPU_THROTTLED,
                                       {mt.CONTAINER_ID: cid})
                op = Operation.REMAIN if not throttled else Operation.UP
            op = node_override(op, state) if dynamic else op
            target = target_quota(op, cur, base, percent)
            if target != cur:
                self._write_quota(pod, cdir, cur, target)

    def _allowed(self, cid: str, cfg: CPUBurstStrategy, limit: int, now: float) -> bool:
        period = cfg.cfs_quota_burst_period_seconds
        if period is None or period < 0:
            return True
        percent = cfg.cfs_quota_burst_percent
        if percent is None or percent < 100:
            return False
        limiter = self.limiters.get(cid)
        if limiter is None:
            capacity = float(period * (percent - 100))
            limiter = BurstLimiter(capacity, random.uniform(0, capacity / 2), now)
            self.limiters[cid] = limiter
        used = last_value(self.ctx, mt.CONTAINER_CPU_USAGE, {mt.CONTAINER_ID: cid}) or 0.0
        return limiter.allow(now, used * 1000 / limit * 100)

    def _gc_limiters(self, cfg: CPUBurstStrategy) -> None:
        period = cfg.cfs_quota_burst_period_seconds or 0
        now = self.ctx.clock.now()
        for cid in [c for c, lim in self.limiters.items() if now - lim.last > 2 * period]:
            del self.limiters[cid]

    def _write_quota(self, pod: KubeDict, cdir: str, cur: int, target: int) -> None:
        env, pod_dir = self.ctx.env, self._pod_dir(pod)
        container = new_cgroup_updater(env, "cpu.cfs_quota_us", cdir, target)
        order = [container]
        try:
            pod_quota = self.reader.read_cpu_quota(pod_dir)
        except MalformedCgroupFileError as e:
            # Unknown pod quota: a container raised alone could outgrow it.
            logger.warning("cpuburst: skip container %s: %s", cdir, e)
            return
        except (CgroupError, OSError):
            pod_quota = -1
        if pod_quota > 0:
            pod_updater = new_cgroup_updater(env, "cpu.cfs_quota_us", pod_dir,
                                             pod_quota + target - cur)
            order = [pod_updater, container] if target > cur else [container, pod_updater]
        errors = self.ctx.executor.update_batch(False, order)
        if not errors:
            logger.info("cpuburst: %s cfs quota %d -> %d", cdir, cur, target)

