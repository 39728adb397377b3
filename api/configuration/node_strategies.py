"""The NodeSLO strategy keys: ``clusterStrategy`` plus ``nodeStrategies[]``.

Corresponds to ResourceThresholdCfg, ResourceQOSCfg, CPUBurstCfg, SystemCfg and their
``Node*`` entry types in upstream `apis/configuration/slo_controller_config.go`, and to the
merging and node selection of `pkg/slo-controller/nodeslo/resource_strategy.go`:

* ``clusterStrategy`` is merged onto the key's defaults (Go MergeCfg, see ``merge``);
* every ``nodeStrategies[i]`` is merged onto the merged cluster strategy; an entry that sets no
  strategy field at all equals the cluster strategy;
* a node gets the first entry whose ``nodeSelector`` matches it, else the cluster strategy;
  for ``system-config`` the node annotation ``node.koordinator.sh/network-bandwidth`` then
  overrides ``totalNetworkBandwidth``.

Upstream quirk kept on purpose: ``totalNetworkBandwidth`` is a Go struct, so a
``system-config`` node entry that sets any strategy field but not the bandwidth carries
``"0"``, which overwrites the cluster value when merged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar

from pydantic import TypeAdapter, ValidationError

from api.base import GoJSONModel
from api.configuration.merge import merge_cfg
from api.configuration.profile import NodeCfgProfile, first_matching, node_annotations, node_name
from api.core import Quantity
from api.errors import MalformedValueError
from api.extension.node import ANNOTATION_NODE_NETWORK_BANDWIDTH
from api.slo.v1alpha1.defaults import (
    default_cpu_burst_strategy,
    default_resource_threshold_strategy,
    default_system_strategy,
)
from api.slo.v1alpha1.resource_qos import ResourceQOSStrategy
from api.slo.v1alpha1.strategies import CPUBurstStrategy, ResourceThresholdStrategy, SystemStrategy

# Node annotation with the node's NIC bandwidth in bits/s (upstream apis/extension).

S = TypeVar("S", bound=GoJSONModel)


def strategy_part(entry: GoJSONModel, strategy_class: type[S]) -> S:
    """The strategy fields of a node entry (or any model sharing them), as a new object."""
    fields = set(strategy_class.model_fields)
    return strategy_class.model_validate(
        entry.model_dump(by_alias=True, exclude_none=True, include=fields))


def _profile_json(entry: NodeCfgProfile) -> dict[str, Any]:
    return entry.model_dump(by_alias=True, exclude_none=True, include={"name", "node_selector"})


class StrategyCfg(GoJSONModel, Generic[S]):
    """A key shaped ``{"clusterStrategy": {...}, "nodeStrategies": [...]}``.

    Subclasses declare ``cluster_strategy`` and ``node_strategies`` and name the strategy
    class, the node entry class and the defaults in class variables.
    """

    strategy_class: ClassVar[type[GoJSONModel]]
    node_class: ClassVar[type[NodeCfgProfile]]
    defaults: ClassVar[Callable[[], GoJSONModel]]

    cluster_strategy: Any = None
    node_strategies: Any = None

    @classmethod
    def default(cls) -> Self:
        """The config in force when the key is missing."""
        return cls.model_validate({"clusterStrategy": cls.defaults().to_dict()})

    def resolve(self) -> Self:
        """The config in force: cluster strategy merged onto the defaults, node entries merged
        onto the cluster strategy."""
        cluster = merge_cfg(type(self).defaults(), self.cluster_strategy)
        nodes = []
        for entry in self.node_strategies or []:
            if entry.model_fields_set & set(self.strategy_class.model_fields):
                merged = merge_cfg(cluster, strategy_part(entry, self.strategy_class))
            else:
                merged = cluster.model_copy(deep=True)
            nodes.append(self.node_class.model_validate(
                {**_profile_json(entry), **merged.model_dump(by_alias=True, exclude_none=True)}))
        return type(self)(cluster_strategy=cluster,
                          node_strategies=nodes if self.node_strategies is not None else None)

    def for_node(self, node: Mapping[str, Any]) -> S:
        """The strategy a node's NodeSLO gets: the first matching node entry, else the
        cluster strategy (call on a resolved config)."""
        entry = first_matching(self.node_strategies, node)
        source = entry if entry is not None else self.cluster_strategy
        if source is None:
            # strategy_class is S's class, which a ClassVar cannot say (no type variables).
            return self.strategy_class()  # type: ignore[return-value]
        return strategy_part(source, self.strategy_class)  # type: ignore[return-value]  # as above


class NodeResourceThresholdStrategy(ResourceThresholdStrategy, NodeCfgProfile):
    """A ``resource-threshold-config`` node entry."""


class ResourceThresholdCfg(StrategyCfg[ResourceThresholdStrategy]):
    """The ``resource-threshold-config`` key (→ ``NodeSLO.spec.resourceUsedThresholdWithBE``)."""

    strategy_class = ResourceThresholdStrategy
    node_class = NodeResourceThresholdStrategy
    defaults = staticmethod(default_resource_threshold_strategy)

    cluster_strategy: ResourceThresholdStrategy | None = None
    node_strategies: list[NodeResourceThresholdStrategy] | None = None


class NodeResourceQOSStrategy(ResourceQOSStrategy, NodeCfgProfile):
    """A ``resource-qos-config`` node entry."""


class ResourceQOSCfg(StrategyCfg[ResourceQOSStrategy]):
    """The ``resource-qos-config`` key (→ ``NodeSLO.spec.resourceQOSStrategy``).

    Its default cluster strategy is empty: koordlet, not the manager, applies the per-class
    defaults (``api.slo.v1alpha1.defaults.default_resource_qos_strategy``).
    """

    strategy_class = ResourceQOSStrategy
    node_class = NodeResourceQOSStrategy
    defaults = ResourceQOSStrategy

    cluster_strategy: ResourceQOSStrategy | None = None
    node_strategies: list[NodeResourceQOSStrategy] | None = None


class NodeCPUBurstCfg(CPUBurstStrategy, NodeCfgProfile):
    """A ``cpu-burst-config`` node entry."""


class CPUBurstCfg(StrategyCfg[CPUBurstStrategy]):
    """The ``cpu-burst-config`` key (→ ``NodeSLO.spec.cpuBurstStrategy``)."""

    strategy_class = CPUBurstStrategy
    node_class = NodeCPUBurstCfg
    defaults = staticmethod(default_cpu_burst_strategy)

    cluster_strategy: CPUBurstStrategy | None = None
    node_strategies: list[NodeCPUBurstCfg] | None = None


class NodeSystemStrategy(SystemStrategy, NodeCfgProfile):
    """A ``system-config`` node entry."""


_QUANTITY: TypeAdapter[str] = TypeAdapter(Quantity)


def node_total_bandwidth(node: Mapping[str, Any]) -> str | None:
    """The node's ``node.koordinator.sh/network-bandwidth`` annotation, None when absent.

    Raises MalformedValueError when it is not a quantity.
    """
    text = node_annotations(node).get(ANNOTATION_NODE_NETWORK_BANDWIDTH)
    if text is None:
        return None
    try:
        return _QUANTITY.validate_python(text)
    except ValidationError:
        name = node_name(node)
        raise MalformedValueError(
            ANNOTATION_NODE_NETWORK_BANDWIDTH,
            f"{text!r} is not a quantity (bits/s, like '10M' or '25G')",
            obj=f"node {name}" if name else None) from None


class SystemCfg(StrategyCfg[SystemStrategy]):
    """The ``system-config`` key (→ ``NodeSLO.spec.systemStrategy``)."""

    strategy_class = SystemStrategy
    node_class = NodeSystemStrategy
    defaults = staticmethod(default_system_strategy)

    cluster_strategy: SystemStrategy | None = None
    node_strategies: list[NodeSystemStrategy] | None = None

    def for_node(self, node: Mapping[str, Any]) -> SystemStrategy:
        """As StrategyCfg.for_node, then the node's bandwidth annotation wins.

        Raises MalformedValueError when that annotation is not a quantity.
        """
        strategy = super().for_node(node)
        bandwidth = node_total_bandwidth(node)
        if bandwidth is not None:
            strategy.total_network_bandwidth = bandwidth
        return strategy


__all__ = [
    "CPUBurstCfg", "NodeCPUBurstCfg", "NodeResourceQOSStrategy",
    "NodeResourceThresholdStrategy", "NodeSystemStrategy", "ResourceQOSCfg",
    "ResourceThresholdCfg", "StrategyCfg", "SystemCfg", "node_total_bandwidth", "strategy_part",
]
