"""LowNodeUtilization: moves pods off nodes whose pods request more than ``targetThresholds``
towards nodes whose pods request less than ``thresholds``.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/nodeutilization/
lownodeutilization.go`` (v0.35.1) as Koordinator wraps it. Utilisation is what the pods
request (cpu, memory, pods and every resource with a threshold); with
``useDeviationThresholds`` the thresholds are the mean utilisation minus ``thresholds`` and plus
``targetThresholds``. Over-utilised nodes are drained, most used first, lowest-priority pods
first, until they are within target or the under-utilised nodes' room is used up.
``metricsUtilization`` is refused by validation: measured usage is LowNodeLoad's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from descheduler.apis.config.args import (
    LowNodeUtilizationArgs,
)
from descheduler.framework.plugins.kubernetes.nodeutilization.nodeutilization import (
    Eviction,
    NodeInfo,
    NodeUsage,
    Percentages,
    average,
    candidate_filter,
    classify,
    destinations_have_room,
    deviation_thresholds,
    enough_underutilized,
    evict_pods_from_source_nodes,
    is_above,
    is_below,
    is_unschedulable,
    node_capacity,
    node_usages,
    rounded,
    sort_nodes_by_usage,
    usage_percentages,
    with_basic_resources,
)
from descheduler.framework.types import Handle, Obj, Status
from descheduler.utils.node import Resources

log = logging.getLogger(__name__)

NAME = "LowNodeUtilization"


class LowNodeUtilization:
    def __init__(self, args: LowNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.thresholds = dict(args.thresholds or {})
        self.target_thresholds = dict(args.target_thresholds or {})
        # The resources with a threshold; usage also counts cpu, memory and pods.
        self.resource_names = list(self.thresholds)
        self.extended_resource_names = with_basic_resources(self.resource_names)
        self.pod_filter = candidate_filter(handle.evictor, self.resource_names, args.eviction_modes)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> LowNodeUtilization:
        return cls(args if isinstance(args, LowNodeUtilizationArgs)
                   else LowNodeUtilizationArgs(), handle)

    def name(self) -> str:
        return NAME

    def _assess(self, usages: Mapping[str, NodeUsage]
                ) -> tuple[dict[str, Percentages], dict[str, tuple[Percentages, Percentages]]]:
        """Usage percentages and each node's (low, high) threshold percentages."""
        if not self.args.use_deviation_thresholds:
            pct = {name: usage_percentages(nu.usage, node_capacity(nu.node))
                   for name, nu in usages.items()}
            return pct, {name: (self.thresholds, self.target_thresholds) for name in usages}
        # Deviations are from the mean of the thresholded resources only.
        pct = {name: usage_percentages({r: nu.usage[r] for r in self.resource_names},
                                       node_capacity(nu.node))
               for name, nu in usages.items()}
        low, high = deviation_thresholds(average(pct.values(), self.resource_names),
                                         self.thresholds, self.target_thresholds)
        return pct, {name: (low, high) for name in usages}

    def balance(self, nodes: Sequence[Obj]) -> Status:
        usages = node_usages(nodes, self.extended_resource_names, self.handle.pods_on_node)
        pct, thresholds = self._assess(usages)

        def under(nu: NodeUsage, usage: Percentages, threshold: Percentages) -> bool:
            if is_unschedulable(nu.node):
                log.debug("Node is unschedulable, thus not considered as underutilized: node "
                          "%s", nu.name)
                return False
            return is_below(usage, threshold)

        def over(nu: NodeUsage, usage: Percentages, threshold: Percentages) -> bool:
            return is_above(usage, threshold)

        low_nodes, high_nodes = classify(usages, pct, thresholds, self.extended_resource_names,
                                         (under, over))
        classified = {n.name for n in low_nodes + high_nodes}
        for name, nu in usages.items():
            if name not in classified:
                log.info("Node is appropriately utilized: node %s, usage %s, usagePercentage "
                         "%s", name, nu.usage, rounded(pct[name]))
        log.info("Criteria for a node under utilization: %s", self.thresholds)
        log.info("Number of underutilized nodes: totalNumber %d", len(low_nodes))
        log.info("Criteria for a node above target utilization: %s", self.target_thresholds)
        log.info("Number of overutilized nodes: totalNumber %d", len(high_nodes))
        if not enough_underutilized(len(low_nodes), len(nodes), self.args.number_of_nodes):
            return Status()
        if not high_nodes:
            log.info("All nodes are under target utilization, nothing to do here")
            return Status()

        def continue_eviction(source: NodeInfo, available: Resources) -> bool:
            # Stop once the source is within target, or the destinations are full.
            within = all(source.available.get(r, 0) >= used
                         for r, used in source.usage.usage.items())
            return not within and destinations_have_room(available)

        sort_nodes_by_usage(high_nodes, ascending=False)
        limits = self.args.eviction_limits
        evict_pods_from_source_nodes(
            high_nodes, low_nodes,
            Eviction(NAME, self.handle.evictor, self.pod_filter, self.args.evictable_namespaces,
                     limits.node if limits is not None else None),
            self.extended_resource_names, continue_eviction)
        return Status()
