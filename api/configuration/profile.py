"""Node selection shared by every slo-controller-config key: ``name`` + ``nodeSelector``.

Corresponds to ``NodeCfgProfile`` in upstream `apis/configuration/slo_controller_config.go`
and the selection loops of `pkg/slo-controller` (first entry whose selector matches the
node's labels wins; a ``null`` or absent selector matches no node; an entry whose selector is
invalid is skipped). Nodes are plain parsed-JSON ``corev1.Node`` dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from api.base import GoJSONModel
from api.meta import LabelSelector, LabelSelectorRequirement
from pkg.util.labels import first_match


class NodeSelectorRequirement(LabelSelectorRequirement, GoJSONModel):
    """A ``matchExpressions`` entry, decoded with Go's rules (keys match ignoring case)."""


class NodeSelector(LabelSelector, GoJSONModel):
    """A ``metav1.LabelSelector`` inside a ConfigMap value, decoded with Go's rules."""

    # The Go-decoded requirement subclass; list is invariant, hence the override's ignore.
    match_expressions: list[NodeSelectorRequirement] | None = None  # type: ignore[assignment]


class NodeCfgProfile(GoJSONModel):
    """Name and node selector of a per-node entry (``nodeConfigs[]``/``nodeStrategies[]``)."""

    # Like an ID for the entry; upstream's console uses it to edit entries.
    name: str | None = None
    # An empty selector matches every node; null or absent matches none.
    node_selector: NodeSelector | None = None


P = TypeVar("P", bound=NodeCfgProfile)


def node_labels(node: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.labels`` of a Node dict (empty when absent)."""
    metadata = (node or {}).get("metadata") or {}
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return dict(labels) if isinstance(labels, Mapping) else {}


def node_annotations(node: Mapping[str, Any] | None) -> dict[str, str]:
    """``metadata.annotations`` of a Node dict (empty when absent)."""
    metadata = (node or {}).get("metadata") or {}
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return dict(annotations) if isinstance(annotations, Mapping) else {}


def node_name(node: Mapping[str, Any] | None) -> str:
    metadata = (node or {}).get("metadata") or {}
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return name if isinstance(name, str) else ""


def first_matching(entries: Sequence[P] | None, node: Mapping[str, Any] | None) -> P | None:
    """The first entry whose ``nodeSelector`` matches the node's labels, or None."""
    return first_match(entries or (), lambda entry: entry.node_selector, node_labels(node))


__all__ = [
    "NodeCfgProfile", "NodeSelector", "NodeSelectorRequirement", "first_matching",
    "node_annotations", "node_labels", "node_name",
]
