"""LowNodeLoad: moves pods off nodes whose measured usage (NodeMetric) is high towards nodes
whose usage is low.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/loadaware/low_node_load.go``.
Per node pool, in order (``LowNodeLoadArgs.node_pools_effective``): node usage and thresholds,
classification, the gates (sources, anomaly detection, targets, ``numberOfNodes``), then a
node pass (high nodes, all pods) and a prod pass (prod-high nodes, prod pods), each evicting
candidates in upstream's order until the source is no longer overutilized or the targets'
room is used up. Victims go to the framework's evictor; with the plugin's ``dryRun`` they are
only logged with why they were chosen, and still counted as moved.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from api.extension.objects import namespaced_name as pod_key
from descheduler.apis.config.args import LowNodeLoadArgs, LowNodeLoadNodePool
from descheduler.framework.plugins.loadaware.anomaly import ANOMALY, AnomalyDetectors
from descheduler.framework.plugins.loadaware.utilization import (
    NodeInfo,
    Targets,
    available,
    classify,
    node_thresholds,
    node_usages,
    overutilized,
    sort_nodes_by_usage,
    sort_pods,
    victim_explanation,
)
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.node import MEMORY, PODS, NodeFit, Resources
from pkg.util.clock import Clock, RealClock
from pkg.util.labels import Selector, parse_selector

log = logging.getLogger(__name__)

NAME = "LowNodeLoad"


def normalize_thresholds(pool: LowNodeLoadNodePool) -> list[str]:
    """Upstream ``newThresholds``: every resource named anywhere (and memory) gets low and high
    (prodLow and prodHigh) of 100 — 0 in deviation mode — where low (prodLow) lacks it, even
    over a configured high. The pool's maps are changed in place; returns the resources
    evaluated (the keys of low)."""
    fill = 0.0 if pool.use_deviation_thresholds else 100.0
    low = pool.low_thresholds = dict(pool.low_thresholds or {})
    high = pool.high_thresholds = dict(pool.high_thresholds or {})
    prod_low = pool.prod_low_thresholds = dict(pool.prod_low_thresholds or {})
    prod_high = pool.prod_high_thresholds = dict(pool.prod_high_thresholds or {})
    for r in [*low, *high, *prod_low, *prod_high, MEMORY]:
        if r not in low:
            low[r] = high[r] = fill
        if r not in prod_low:
            prod_low[r] = prod_high[r] = fill
    return list(low)


class _Pool:
    """A node pool with its selector, normalised thresholds and anomaly detectors."""

    def __init__(self, pool: LowNodeLoadNodePool, cache_timeout: float, clock: Clock) -> None:
        self.pool = pool
        self.name = pool.name
        self.resource_names = normalize_thresholds(pool)
        self.selector: Selector | None = (parse_selector(pool.node_selector)
                                          if pool.node_selector is not None else None)
        condition = pool.anomaly_condition
        self.immediate = condition is None or condition.consecutive_abnormalities == 1
        self.nodes = AnomalyDetectors(condition, cache_timeout, clock) if condition else None
        self.prod = AnomalyDetectors(condition, cache_timeout, clock) if condition else None


class LowNodeLoad:
    def __init__(self, args: LowNodeLoadArgs, handle: Handle, clock: Clock | None = None) -> None:
        self.args = args
        self.handle = handle
        self.clock = clock or RealClock()
        self.pools = [_Pool(p, args.detector_cache_timeout, self.clock)
                      for p in args.node_pools_effective()]
        ns = args.evictable_namespaces
        self._include = set(ns.include) if ns is not None else set()
        self._exclude = set(ns.exclude) if ns is not None else set()
        self._pod_selectors = [parse_selector(s.selector) for s in args.pod_selectors
                               if s.selector is not None]

    @classmethod
    def new(cls, args: Any, handle: Handle) -> LowNodeLoad:
        return cls(args if isinstance(args, LowNodeLoadArgs) else LowNodeLoadArgs(), handle)

    def name(self) -> str:
        return NAME

    def pod_filter(self, pod: Obj) -> bool:
        """Evictable namespaces, pod selectors (any matches), then the framework's filters."""
        md = pod.get("metadata") or {}
        namespace = md.get("namespace") or ""
        if self._include and namespace not in self._include or namespace in self._exclude:
            return False
        labels = md.get("labels") or {}
        if self._pod_selectors and not any(s.matches(labels) for s in self._pod_selectors):
            return False
        return self.handle.evictor.filter(pod)

    def balance(self, nodes: Sequence[Obj]) -> Status:
        if self.args.paused:
            log.info("LowNodeLoad is paused and will do nothing")
            return Status()
        processed: set[str] = set()
        for pool in self.pools:
            if pool.selector is None:
                pool_nodes = list(nodes)
            else:
                pool_nodes = [n for n in nodes
                              if pool.selector.matches((n.get("metadata") or {}).get("labels")
                                                       or {})
                              and (n.get("metadata") or {}).get("name") not in processed]
            processed |= self._balance_pool(pool, pool_nodes)
        return Status()

    def _abnormal(self, detectors: AnomalyDetectors | None, immediate: bool,
                  nodes: list[NodeInfo]) -> list[NodeInfo]:
        if immediate or detectors is None:
            return list(nodes)
        return [n for n in nodes if detectors.mark_abnormal(n.name) == ANOMALY]

    def _balance_pool(self, pool: _Pool, nodes: list[Obj]) -> set[str]:
        """Balances one pool; returns the names of its source nodes."""
        p = pool.pool
        names = pool.resource_names
        usages = node_usages(
            nodes, names, lambda n: self.handle.node_metrics.get(n), self.handle.pods_on_node,
            self.args.node_metric_expiration_seconds, self.clock.now())
        thresholds = node_thresholds(
            usages, p.low_thresholds or {}, p.high_thresholds or {},
            p.prod_low_thresholds or {}, p.prod_high_thresholds or {}, names,
            p.use_deviation_thresholds)
        c = classify(usages, thresholds)
        log.info("Criteria for nodes under low thresholds and above high thresholds, nodePool "
                 "%s: %d low, %d bothLow, %d prodLow, %d high, %d prodHigh", pool.name,
                 len(c.low), len(c.both_low), len(c.prod_low), len(c.high), len(c.prod_high))
        if not c.high and not c.prod_high:
            log.info("No node is overutilized, nothing to do here, nodePool %s", pool.name)
            return set()
        abnormal = self._abnormal(pool.nodes, pool.immediate, c.high)
        prod_abnormal = self._abnormal(pool.prod, pool.immediate, c.prod_high)
        if not abnormal and not prod_abnormal:
            log.info("None of the overutilized nodes is abnormal yet, nodePool %s", pool.name)
            return set()
        lows = len(c.low) + len(c.prod_low) + len(c.both_low)
        if lows == 0:
            log.info("No node is underutilized, nothing to do here, you might tune your "
                     "thresholds further, nodePool %s", pool.name)
            return set()
        for detectors, infos in ((pool.nodes, c.low + c.both_low), (pool.prod, c.prod_low)):
            for info in infos:
                if detectors is not None:
                    detectors.reset(info.name)
        if lows <= self.args.number_of_nodes:
            log.info("Number of nodes underutilized (%d) is less or equal than NumberOfNodes "
                     "(%d), nothing to do here, nodePool %s", lows, self.args.number_of_nodes,
                     pool.name)
            return set()
        if lows == len(usages):
            log.info("All nodes are underutilized, nothing to do here, nodePool %s", pool.name)
            return set()

        weights = dict(p.resource_weights or {})
        sort_nodes_by_usage(abnormal, weights, prod=False)
        sort_nodes_by_usage(prod_abnormal, weights, prod=True)
        node_avail = available(c.low, names, False)
        both_avail = available(c.both_low, names, False)
        for r in names:
            node_avail[r] += both_avail[r]
        self._balance(pool, abnormal, c.low + c.both_low, node_avail, weights, prod=False)
        prod_avail = available(c.prod_low, names, True)
        prod_both_avail = available(c.both_low, names, True)
        for r in names:
            # What the node pass left of the bothLow nodes' room is theirs to give.
            both_avail[r] = min(both_avail[r], node_avail[r])
            prod_avail[r] += min(prod_both_avail[r], both_avail[r])
        self._balance(pool, prod_abnormal, c.prod_low + c.both_low, prod_avail, weights,
                      prod=True)
        for detectors, infos in ((pool.nodes, abnormal), (pool.prod, prod_abnormal)):
            for info in infos:
                if detectors is not None and not pool.immediate:
                    detectors.mark_normal(info.name)
        return {n.name for n in abnormal + prod_abnormal}

    def _balance(self, pool: _Pool, sources: list[NodeInfo], targets: list[NodeInfo],
                 avail: Resources, weights: Mapping[str, int], *, prod: bool) -> None:
        if not targets:
            log.info("No target nodes available for balancing, skip eviction, nodePool %s, "
                     "prod %s, sourceNodes %d", pool.name, prod, len(sources))
            return
        # The least any source pod uses of each resource (0 where one reports none).
        metrics = [m for source in sources for m in source.usage.pod_metrics.values()]
        floor = {r: min(m.get(r, 0) for m in metrics) for r in {r for m in metrics for r in m}}
        fitting = Targets(targets, floor, NodeFit(self.handle.pods_on_node), prod)
        for source in sources:
            candidates = [pod for pod in (source.usage.prod_pods if prod
                                          else source.usage.all_pods)
                          if self.pod_filter(pod) and self._fits(pod, source, fitting)]
            if not candidates:
                log.info("No removable pods on node %s, try next node, nodePool %s",
                         source.name, pool.name)
                continue
            sort_pods(candidates, source, weights, prod)
            self._evict_pods(pool, candidates, source, avail, weights, prod)

    def _fits(self, pod: Obj, source: NodeInfo, targets: Targets) -> bool:
        if not self.args.node_fit:
            return True
        metric = source.usage.pod_metrics.get(pod_key(pod))
        if metric is None:
            log.debug("Failed to find PodMetric of pod %s on node %s", pod_key(pod), source.name)
            return False
        return targets.fits_any_with_threshold(pod, metric)

    def _continue(self, pool: _Pool, source: NodeInfo, avail: Resources, prod: bool) -> bool:
        usage = source.usage.prod_usage if prod else source.usage.usage
        high = source.thresholds.prod_high if prod else source.thresholds.high
        if not overutilized(usage, high):
            detectors = pool.prod if prod else pool.nodes
            if detectors is not None:
                detectors.reset(source.name)
            return False
        return all(v > 0 for v in avail.values())

    def _evict_pods(self, pool: _Pool, pods: list[Obj], source: NodeInfo, avail: Resources,
                    weights: Mapping[str, int], prod: bool) -> None:
        for rank, pod in enumerate(pods, 1):
            if not self._continue(pool, source, avail, prod):
                return
            if not self.pod_filter(pod):
                log.debug("Pod %s aborted eviction because it was filtered by filters",
                          pod_key(pod))
                continue
            reason = eviction_reason(source, pool.pool, prod)
            metric = source.usage.pod_metrics.get(pod_key(pod))
            # Why this victim: formatted only when it is logged (evictions are a hot path).
            why = (victim_explanation(pod, source, weights, prod, rank, len(pods))
                   if log.isEnabledFor(logging.INFO) else "")
            if self.args.dry_run:
                log.info("Evict pod in dry run mode: pod %s, node %s, nodePool %s, %s, pod "
                         "usage %s; %s", pod_key(pod), source.name, pool.name, reason,
                         metric or {}, why)
            elif not self.handle.evictor.evict(pod, EvictOptions(NAME, reason)):
                log.info("Failed to Evict Pod %s, node %s, nodePool %s", pod_key(pod),
                         source.name, pool.name)
                continue
            else:
                log.info("Evicted Pod %s, node %s, nodePool %s, pod usage %s: %s; %s",
                         pod_key(pod), source.name, pool.name, metric or {}, reason, why)
            if metric is None:
                continue
            for r in avail:
                q = 1 if r == PODS else metric.get(r, 0)
                avail[r] -= q
                if r in source.usage.usage:
                    source.usage.usage[r] -= q
                if prod and r in source.usage.prod_usage:
                    source.usage.prod_usage[r] -= q


def eviction_reason(source: NodeInfo, pool: LowNodeLoadNodePool, prod: bool) -> str:
    """``node is overutilized, <node|prod> <r> usage(<pct>%)>threshold(<thr>%)`` for each
    resource of the high thresholds over them, by name."""
    usage = source.usage.prod_usage if prod else source.usage.usage
    high = source.thresholds.prod_high if prod else source.thresholds.high
    percents = (pool.prod_high_thresholds if prod else pool.high_thresholds) or {}
    over = overutilized(usage, high)
    parts = []
    for r in sorted(high):
        if r not in over:
            continue
        alloc = source.usage.allocatable.get(r, 0)
        pct = 100 * usage[r] / alloc if alloc else 0.0
        parts.append(f"{'prod' if prod else 'node'} {r} usage({pct:.2f}%)>"
                     f"threshold({percents.get(r, 0.0):.2f}%)")
    return "node is overutilized, " + ", ".join(parts)
