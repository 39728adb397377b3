"""The plugin framework of the noderesource controller (upstream
`pkg/slo-controller/noderesource/framework`).

A plugin joins the stages whose base class it subclasses: ``calculate`` (and ``reset``)
produce ``ResourceItem``s that are collected into a ``NodeResource``; ``prepare`` writes them
onto a copy of the node; ``need_sync`` says whether the node's status differs enough to be
written and ``need_sync_meta`` whether its labels or annotations do (the metadata patch path).
Everything here works on parsed JSON dicts and integers (cpu in millicores, memory in bytes);
no API access, so the same code serves the controller and the benchmark: what a plugin reads
besides the node, its pods and its NodeMetric arrives in ``PluginInputs``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from api.configuration import ColocationStrategy, SLOControllerConfig

# A ResourceList restricted to cpu (millicores) and memory (bytes).
Resources = dict[str, int]


@dataclass(slots=True)
class ResourceItem:
    """One calculated resource (upstream ``framework.ResourceItem``); ``reset`` removes it."""

    name: str
    quantity: int | None = None
    message: str = ""
    reset: bool = False
    annotations: dict[str, str] | None = None  # node annotations to set (CPUNormalization...)
    labels: dict[str, str] | None = None  # node labels to set (GPU model, driver...)
    zones: dict[str, int] | None = None  # NUMA zone name → quantity (NodeResourceTopology)


@dataclass(slots=True)
class NodeResource:
    """What the calculate stage produced for a node (upstream ``framework.NodeResource``)."""

    resources: dict[str, int | None] = field(default_factory=dict)
    resets: dict[str, bool] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    # zone name → resource name → quantity, written to the NodeResourceTopology (PreUpdate)
    zone_resources: dict[str, dict[str, int]] = field(default_factory=dict)

    def set(self, items: list[ResourceItem]) -> None:
        for item in items:
            self.resources[item.name] = item.quantity
            self.resets[item.name] = item.reset
            if item.message:
                self.messages[item.name] = item.message
            if item.annotations:
                self.annotations.update(item.annotations)
            if item.labels:
                self.labels.update(item.labels)
            for zone, quantity in (item.zones or {}).items():
                self.zone_resources.setdefault(zone, {})[item.name] = quantity


class CalculateError(Exception):
    """A plugin could not calculate for a node: logged, and its items skipped (upstream
    returns an error from ``Calculate``; the other plugins still run)."""


@dataclass(slots=True)
class PodInfo:
    """What the calculation needs of a pod, extracted once per pod version."""

    key: str  # namespace/name, the key of NodeMetric.status.podsMetric
    phase: str
    priority_class: str  # with default (upstream GetPodPriorityClassWithDefault)
    qos: str  # Koordinator QoS with default
    requests: Resources  # cpu/memory of Kubernetes PodRequests
    # NUMA nodes of the pod's resource-status allocation (empty: shares every NUMA node)
    numa_nodes: tuple[int, ...] = ()


@dataclass(slots=True)
class ResourceMetrics:
    """The node's NodeMetric status, as JSON (``None`` when there is no NodeMetric)."""

    status: Mapping[str, Any] | None


@dataclass(slots=True)
class PluginInputs:
    """What some plugins read besides the node, its pods and its NodeMetric."""

    # The whole slo-controller-config (cpu-normalization-config, resource-amplification-config);
    # None while it is not available.
    config: SLOControllerConfig | None = None
    # The NodeResourceTopology named after the node, as JSON (None: there is none).
    topology: Mapping[str, Any] | None = None
    # The Device named after the node, as JSON (None: there is none).
    device: Mapping[str, Any] | None = None


class Plugin:
    """Base of every noderesource plugin (upstream ``framework.Plugin``). ``name`` is the name
    ``--noderesource-plugins`` selects it by; a plugin declares the stages it joins by
    subclassing their bases below."""

    name: ClassVar[str] = ""


class CalculatePlugin(Plugin):
    """ResourceCalculate: the node's items, or their resets when colocation is off."""

    def calculate(self, strategy: ColocationStrategy, node: Mapping[str, Any],
                  pods: list[PodInfo], metrics: ResourceMetrics, now: float,
                  extra: PluginInputs) -> list[ResourceItem]:
        raise NotImplementedError

    def reset(self, node: Mapping[str, Any], message: str) -> list[ResourceItem]:
        raise NotImplementedError


class PreparePlugin(Plugin):
    """NodePrepare: the calculated items written onto a copy of the node."""

    def prepare(self, node: dict[str, Any], nr: NodeResource) -> None:
        raise NotImplementedError


class StatusCheckPlugin(Plugin):
    """NodeStatusCheck: whether the node's status differs enough to be written."""

    def need_sync(self, strategy: ColocationStrategy, old: Mapping[str, Any],
                  new: Mapping[str, Any]) -> tuple[bool, str]:
        raise NotImplementedError


class MetaCheckPlugin(Plugin):
    """NodeMetaCheck: whether the node's labels or annotations need a patch."""

    def need_sync_meta(self, old: Mapping[str, Any], new: Mapping[str, Any]
                       ) -> tuple[bool, str]:
        raise NotImplementedError


__all__ = [
    "CalculateError", "CalculatePlugin", "MetaCheckPlugin", "NodeResource", "Plugin",
    "PluginInputs", "PodInfo", "PreparePlugin", "ResourceItem", "ResourceMetrics", "Resources",
    "StatusCheckPlugin",
]
