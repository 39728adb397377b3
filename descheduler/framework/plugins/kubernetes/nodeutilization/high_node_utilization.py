"""HighNodeUtilization: evicts pods from nodes whose pods request less than ``thresholds`` so
the scheduler (with a bin-packing score) can pack them onto fewer nodes.

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/nodeutilization/
highnodeutilization.go`` (v0.35.1) as Koordinator wraps it. Utilisation is what the pods
request; every schedulable node that is not under-utilised is a destination, with room up to
its full capacity. Under-utilised nodes are emptied least used first, lowest-priority pods
first, while the destinations have room for every resource.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from descheduler.apis.config.args import (
    MAX_RESOURCE_PERCENTAGE,
    HighNodeUtilizationArgs,
)
from descheduler.framework.plugins.kubernetes.nodeutilization.nodeutilization import (
    Eviction,
    NodeInfo,
    NodeUsage,
    Percentages,
    candidate_filter,
    classify,
    destinations_have_room,
    enough_underutilized,
    evict_pods_from_source_nodes,
    is_below,
    is_unschedulable,
    node_capacity,
    node_usages,
    sort_nodes_by_usage,
    usage_percentages,
    with_basic_resources,
)
from descheduler.framework.types import Handle, Obj, Status
from descheduler.utils.node import Resources

log = logging.getLogger(__name__)

NAME = "HighNodeUtilization"


class HighNodeUtilization:
    def __init__(self, args: HighNodeUtilizationArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.thresholds = dict(args.thresholds or {})
        # Destinations may be filled up to their capacity.
        self.high_thresholds = dict.fromkeys(self.thresholds, MAX_RESOURCE_PERCENTAGE)
        self.resource_names = with_basic_resources(self.thresholds)
        self.pod_filter = candidate_filter(handle.evictor, self.thresholds, args.eviction_modes)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> HighNodeUtilization:
        return cls(args if isinstance(args, HighNodeUtilizationArgs)
                   else HighNodeUtilizationArgs(), handle)

    def name(self) -> str:
        return NAME

    def balance(self, nodes: Sequence[Obj]) -> Status:
        usages = node_usages(nodes, self.resource_names, self.handle.pods_on_node)
        pct = {name: usage_percentages(nu.usage, node_capacity(nu.node))
               for name, nu in usages.items()}

        def underutilized(nu: NodeUsage, usage: Percentages, threshold: Percentages) -> bool:
            return is_below(usage, threshold)

        def schedulable(nu: NodeUsage, usage: Percentages, threshold: Percentages) -> bool:
            if is_unschedulable(nu.node):
                log.debug("Node is unschedulable: node %s", nu.name)
                return False
            return True

        low_nodes, schedulable_nodes = classify(
            usages, pct, {name: (self.thresholds, self.high_thresholds) for name in usages},
            self.resource_names, (underutilized, schedulable))
        log.info("Criteria for a node below target utilization: %s", self.thresholds)
        log.info("Number of underutilized nodes: totalNumber %d", len(low_nodes))
        if not enough_underutilized(len(low_nodes), len(nodes), self.args.number_of_nodes):
            return Status()
        if not schedulable_nodes:
            log.info("No node is available to schedule the pods, nothing to do here")
            return Status()

        def continue_eviction(_: NodeInfo, available: Resources) -> bool:
            return destinations_have_room(available)

        sort_nodes_by_usage(low_nodes, ascending=True)
        evict_pods_from_source_nodes(
            low_nodes, schedulable_nodes,
            Eviction(NAME, self.handle.evictor, self.pod_filter, self.args.evictable_namespaces),
            self.resource_names, continue_eviction)
        return Status()
