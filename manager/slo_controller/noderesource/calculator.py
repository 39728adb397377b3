"""The pure part of a noderesource reconcile (upstream
`pkg/slo-controller/noderesource/resource_calculator.go`): from a node, its NodeMetric status
and its pods to the node as it should be, and whether it must be written.

No API access and no shared state, so the controller and ``manager.bench`` run the same code.
A plugin runs at the stages it subclasses (CPUNormalization has no status check, Mid no meta
check), in registration order.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from api.configuration import ColocationCfg, ColocationStrategy
from manager.slo_controller.noderesource.framework import (
    CalculateError,
    CalculatePlugin,
    MetaCheckPlugin,
    NodeResource,
    Plugin,
    PluginInputs,
    PodInfo,
    PreparePlugin,
    ResourceMetrics,
    StatusCheckPlugin,
)
from manager.slo_controller.noderesource.plugins import PLUGINS

log = logging.getLogger(__name__)

DISABLED_MESSAGE = "node colocation is disabled in Config, reason: DisableInConfig"


def is_colocation_disabled(cfg: ColocationCfg, strategy: ColocationStrategy) -> bool:
    """Off unless both the cluster-level and the node's ``enable`` are true (node configs
    can only turn colocation off)."""
    return not cfg.enable or not strategy.enable


def calculate(cfg: ColocationCfg, strategy: ColocationStrategy, node: Mapping[str, Any],
              metric_status: Mapping[str, Any] | None, pods: list[PodInfo], now: float,
              plugins: Sequence[Plugin] = PLUGINS,
              extra: PluginInputs | None = None) -> NodeResource:
    """Every calculate plugin's items for the node (their resets when colocation is off).
    A plugin that cannot calculate is logged and contributes nothing."""
    nr = NodeResource()
    if is_colocation_disabled(cfg, strategy):
        for plugin in plugins:
            if isinstance(plugin, CalculatePlugin):
                nr.set(plugin.reset(node, DISABLED_MESSAGE))
        return nr
    metrics = ResourceMetrics(metric_status)
    inputs = extra if extra is not None else PluginInputs()
    for plugin in plugins:
        if not isinstance(plugin, CalculatePlugin):
            continue
        try:
            nr.set(plugin.calculate(strategy, node, pods, metrics, now, inputs))
        except CalculateError as err:
            log.info("node %s: plugin %s skipped: %s",
                     (node.get("metadata") or {}).get("name"), plugin.name, err)
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
        if isinstance(plugin, PreparePlugin):
            plugin.prepare(prepared, nr)
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
        if not isinstance(plugin, StatusCheckPlugin):
            continue
        diff, reason = plugin.need_sync(strategy, old, new)
        if diff:
            return True, reason
    return False, ""


def need_meta_update(old: Mapping[str, Any], new: Mapping[str, Any],
                     plugins: Sequence[Plugin] = PLUGINS) -> tuple[bool, str]:
    """Whether a NodeMetaCheck plugin sees a label/annotation to patch (first one wins)."""
    for plugin in plugins:
        if not isinstance(plugin, MetaCheckPlugin):
            continue
        diff, reason = plugin.need_sync_meta(old, new)
        if diff:
            return True, f"{plugin.name}: {reason}"
    return False, ""


def meta_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch of labels and annotations from ``old`` to ``new`` (upstream
    ``client.MergeFrom``; a removed key is ``null``)."""
    patch: dict[str, Any] = {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    for field in ("labels", "annotations"):
        before, after = old_meta.get(field) or {}, new_meta.get(field) or {}
        changes: dict[str, str | None] = {k: v for k, v in after.items() if before.get(k) != v}
        changes.update({k: None for k in before if k not in after})
        if changes:
            patch[field] = changes
    return {"metadata": patch} if patch else {}


__all__ = ["DISABLED_MESSAGE", "calculate", "is_colocation_disabled", "meta_patch",
           "need_meta_update", "need_status_update", "prepare_node"]
