"""Which informer updates are worth a reconcile.

Corresponds to controller-runtime's ``predicate.GenerationChangedPredicate`` and the node
update filter of upstream koordinator `pkg/slo-controller` (``EnqueueRequestForNode``: a node
update matters to the slo-controller only when its allocatable resources or labels changed).
Objects are parsed-JSON dicts or ``api`` models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.meta import KubeObject


def _generation(obj: Any) -> int | None:
    if isinstance(obj, KubeObject):
        return obj.metadata.generation
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    return metadata.get("generation") if isinstance(metadata, Mapping) else None


def generation_changed(old: Any, new: Any) -> bool:
    """True when the spec changed (a new ``metadata.generation``); status and metadata-only
    writes keep the generation and are skipped."""
    return _generation(old) != _generation(new)


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: object = obj
    for part in path:
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return cur


def node_slo_inputs_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when a Node update changes what the slo-controller computes from it: upstream's
    allocatable and labels, and (our addition) annotations, which carry the per-node
    colocation strategy and network bandwidth."""
    return any(_get(old, *path) != _get(new, *path)
               for path in (("status", "allocatable"), ("metadata", "labels"),
                            ("metadata", "annotations")))


__all__ = ["generation_changed", "node_slo_inputs_changed"]
