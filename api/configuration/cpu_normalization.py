"""``cpu-normalization-config``: per-CPU-model ratios that normalise node CPU capacity.

Corresponds to ``CPUNormalizationCfg``/``CPUNormalizationStrategy``/``ModelRatioCfg`` in
upstream `apis/configuration/slo_controller_config.go` and the config handling of
`pkg/slo-controller/noderesource/plugins/cpunormalization` (defaults ``enable=false``,
``ratioModel={}``; node entries merged onto the cluster strategy; first matching entry wins;
the node label ``node.koordinator.sh/cpu-normalization-enabled`` overrides ``enable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.base import GoJSONModel
from api.configuration.merge import merge_cfg
from api.configuration.profile import NodeCfgProfile, first_matching, node_labels, node_name
from api.errors import MalformedValueError
from api.extension.cpu_normalization import parse_cpu_normalization_enabled


class ModelRatioCfg(GoJSONModel):
    """Ratios of one CPU model by hyper-threading (HT) and turbo state."""

    base_ratio: float | None = None  # HT off, turbo off
    hyper_thread_enabled_ratio: float | None = None  # HT on, turbo off
    turbo_enabled_ratio: float | None = None  # HT off, turbo on
    hyper_thread_turbo_enabled_ratio: float | None = None  # both on


class CPUNormalizationStrategy(GoJSONModel):
    """Whether CPU normalization is on and the ratios it uses."""

    # When false the node's ratio annotation is set to "1.00".
    enable: bool | None = None
    # Used when the node's CPU model has no entry.
    default_ratio: float | None = None
    # CPU model (``cpuModel`` of the node's cpu-basic-info) → ratios.
    ratio_model: dict[str, ModelRatioCfg] | None = None


class NodeCPUNormalizationCfg(CPUNormalizationStrategy, NodeCfgProfile):
    """A ``nodeConfigs[]`` entry."""


def default_cpu_normalization_strategy() -> CPUNormalizationStrategy:
    return CPUNormalizationStrategy(enable=False, ratio_model={})


def cpu_normalization_enabled_label(node: Mapping[str, Any]) -> bool | None:
    """The node's ``cpu-normalization-enabled`` label as a bool, None when absent.

    Raises MalformedValueError naming the node when it is not a Go bool (``true``, ``0``...).
    """
    try:
        return parse_cpu_normalization_enabled(node_labels(node))
    except MalformedValueError as err:
        name = node_name(node)
        raise MalformedValueError(err.key, err.reason,
                                  obj=f"node {name}" if name else None) from None


class CPUNormalizationCfg(CPUNormalizationStrategy):
    """The ``cpu-normalization-config`` key (→ node annotation
    ``node.koordinator.sh/cpu-normalization-ratio``)."""

    node_configs: list[NodeCPUNormalizationCfg] | None = None

    @classmethod
    def default(cls) -> CPUNormalizationCfg:
        return cls.model_validate(default_cpu_normalization_strategy().to_dict())

    def resolve(self) -> CPUNormalizationCfg:
        """Cluster strategy merged onto the defaults, node entries onto the cluster strategy."""
        cluster = merge_cfg(default_cpu_normalization_strategy(), self)
        resolved = CPUNormalizationCfg.model_validate(
            cluster.model_dump(by_alias=True, exclude_none=True))
        if self.node_configs is not None:
            resolved.node_configs = [
                NodeCPUNormalizationCfg.model_validate({
                    **entry.model_dump(by_alias=True, exclude_none=True,
                                       include={"name", "node_selector"}),
                    **merge_cfg(cluster, entry).model_dump(by_alias=True, exclude_none=True)})
                for entry in self.node_configs]
        return resolved

    def for_node(self, node: Mapping[str, Any]) -> CPUNormalizationStrategy:
        """The strategy of a node, ``enable`` taken from the node label when it has one.

        Raises MalformedValueError when that label is not a boolean.
        """
        entry = first_matching(self.node_configs, node)
        strategy = merge_cfg(CPUNormalizationStrategy(), entry if entry is not None else self)
        enabled = cpu_normalization_enabled_label(node)
        if enabled is not None:
            strategy.enable = enabled
        return strategy


__all__ = [
    "CPUNormalizationCfg", "CPUNormalizationStrategy",
    "ModelRatioCfg", "NodeCPUNormalizationCfg", "cpu_normalization_enabled_label",
    "default_cpu_normalization_strategy",
]
