"""The NodeMetric spec koord-manager writes for a node: koordlet's collect policy.

Corresponds to ``getNodeMetricSpec`` and ``isColocationCfgDisabled`` of upstream
`pkg/slo-controller/nodemetric` (nodemetric_controller.go, collect_policy.go): the policy comes
from the node's colocation strategy (cluster strategy, first matching ``nodeConfigs`` entry,
node annotation and ratio labels); when that strategy is invalid, or colocation is off for the
node, koordlet gets the built-in defaults (300 s, 60 s, 5m/10m/30m, usageWithoutPageCache).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from api.configuration import (
    ColocationCfg,
    ColocationStrategy,
    default_colocation_strategy,
    is_colocation_strategy_valid,
)
from api.configuration.profile import node_name
from api.slo.v1alpha1.nodemetric import (
    MemoryCollectPolicy,
    NodeMetricCollectPolicy,
    NodeMetricSpec,
)

log = logging.getLogger(__name__)

_MEMORY_COLLECT_POLICIES = frozenset(p.value for p in MemoryCollectPolicy)


def is_colocation_cfg_disabled(cfg: ColocationCfg, strategy: ColocationStrategy) -> bool:
    """Colocation is off for a node unless both the cluster-level ``enable`` and the node's
    strategy ``enable`` are true (a node entry cannot turn it on cluster-wide)."""
    return not cfg.enable or not strategy.enable


def node_colocation_strategy(cfg: ColocationCfg, node: Mapping[str, Any]) -> ColocationStrategy:
    """The strategy the node's NodeMetric is written from (see the module docstring)."""
    strategy = cfg.for_node(node)
    if not is_colocation_strategy_valid(strategy) or is_colocation_cfg_disabled(cfg, strategy):
        return default_colocation_strategy()
    if strategy.metric_memory_collect_policy not in _MEMORY_COLLECT_POLICIES:
        # The NodeMetric CRD only admits the enum's values: writing another one would fail
        # on every reconcile, so the node keeps collecting with the defaults instead.
        log.error("node %s: metricMemoryCollectPolicy %r is not one of %s; using the defaults",
                  node_name(node), strategy.metric_memory_collect_policy,
                  sorted(_MEMORY_COLLECT_POLICIES))
        return default_colocation_strategy()
    return strategy


def node_metric_spec(cfg: ColocationCfg, node: Mapping[str, Any]) -> NodeMetricSpec:
    """``spec`` of the node's NodeMetric: its ``metricCollectPolicy``."""
    strategy = node_colocation_strategy(cfg, node)
    memory_policy = strategy.metric_memory_collect_policy  # one of the enum's: checked above
    return NodeMetricSpec(metric_collect_policy=NodeMetricCollectPolicy(
        aggregate_duration_seconds=strategy.metric_aggregate_duration_seconds,
        report_interval_seconds=strategy.metric_report_interval_seconds,
        node_aggregate_policy=(strategy.metric_aggregate_policy.model_copy(deep=True)
                               if strategy.metric_aggregate_policy is not None else None),
        node_memory_collect_policy=(MemoryCollectPolicy(memory_policy)
                                    if memory_policy is not None else None),
    ))


__all__ = ["is_colocation_cfg_disabled", "node_colocation_strategy", "node_metric_spec"]
