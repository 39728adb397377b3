"""The pure part of a noderesource reconcile (upstream
`pkg/slo-controller/noderesource/resource_calculator.go`): from a node, its NodeMetric status
and its pods to the node as it should be, and whether it must be written.

No API access and no shared state, so the controller and ``manager.bench`` run the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from api.configuration import ColocationCfg, ColocationStrategy
from manager.slo_controller.noderesource.framework import (
    NodeResource,
    Plugin,
    PodInfo,
    ResourceMetrics,
)
from manager.slo_controller.noderesource.plugins import PLUGINS

DISABLED_MESSAGE = "node colocation is disabled in Config, reason: DisableInConfig"


def is_colocation_disabled(cfg: ColocationCfg, strategy: ColocationStrategy) -> bool:
    """Off unless both the cluster-level and the node's ``enable`` are true (node configs
    can only turn colocation off)."""
    return not cfg.enable or not strategy.enable


def calculate(cfg: ColocationCfg, strategy: ColocationStrategy, node: Mapping[str, Any],
              metric_status: Mapping[str, Any] | None, pods: list[PodInfo], now: float,
              plugins: Sequence[Plugin] = PLUGINS) -> NodeResource:
    """Every calculate plugin's items for the node (their resets when colocation is off)."""
    nr = NodeResource()
    if is_colocation_disabled(cfg, strategy):
        for plugin in plugins:
            nr.set(plugin.reset(node, DISABLED_MESSAGE))  # type: ignore[attr-defined]
        return nr
    metrics = ResourceMetrics(metric_status)
    for plugin in plugins:
        nr.set(plugin.calculate(strategy, node, pods, metrics, now))  # type: ignore[attr-defined]
    return nr


def prepare_node(node: Mapping[str, Any], nr: NodeResource,
                 plugins: Sequence[Plugin] = PLUGINS) -> dict[str, Any]:
    """A copy of the node with the results written (capacity, allocatable, annotations)."""
    # Plugins only touch annotations, capacity and allocatable: copy just those levels.
    prepared = dict(node)
    meta = dict(node.get("metadata") or {})
    if meta.get("annotations") is not None:
        meta["annotations"] = dict(meta["annotations"])
    prepared["metadata"] = meta
    status = dict(node.get("status") or {})
    status["capacity"] = dict(status.get("capacity") or {})
    status["allocatable"] = dict(status.get("allocatable") or {})
    prepared["status"] = status
    for plugin in plugins:
        plugin.prepare(prepared, nr)  # type: ignore[attr-defined]
    return prepared


def need_status_update(strategy: ColocationStrategy, old: Mapping[str, Any],
                       new: Mapping[str, Any], last_update: float | None, now: float,
                       plugins: Sequence[Plugin] = PLUGINS) -> tuple[bool, str]:
    """Write when never written by us, when ``updateTimeThresholdSeconds`` passed since our
    last write, or when a plugin sees a difference past ``resourceDiffThreshold``."""
    if last_update is None:
        return True, "first update"
    if now - last_update > (strategy.update_time_threshold_seconds or 0):
        return True, "updateTimeThresholdSeconds passed"
    for plugin in plugins:
        diff, reason = plugin.need_sync(strategy, old, new)  # type: ignore[attr-defined]
        if diff:
            return True, reason
    return False, ""


__all__ = ["DISABLED_MESSAGE", "calculate", "is_colocation_disabled", "need_status_update",
           "prepare_node"]
