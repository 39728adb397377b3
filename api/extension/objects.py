"""Read-only access to labels, annotations and spec fields of parsed-JSON objects.

No upstream counterpart (Go code reads typed struct fields). Pods and nodes here are plain dicts
exactly as the API server sends them (``metadata.labels``, ``spec.priority``...); these helpers
never copy and treat a missing or null map as empty, so hot paths stay cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

EMPTY: Mapping[str, str] = MappingProxyType({})

# A Kubernetes object as parsed JSON (``json.loads`` of a Pod, Node, ElasticQuota...).
KubeDict = Mapping[str, Any]


def metadata_of(obj: KubeDict | None) -> Mapping[str, Any]:
    """``obj.metadata``, or an empty mapping."""
    if not obj:
        return EMPTY
    return obj.get("metadata") or EMPTY


def labels_of(obj: KubeDict | None) -> Mapping[str, str]:
    """``obj.metadata.labels``, or an empty mapping."""
    return metadata_of(obj).get("labels") or EMPTY


def annotations_of(obj: KubeDict | None) -> Mapping[str, str]:
    """``obj.metadata.annotations``, or an empty mapping."""
    return metadata_of(obj).get("annotations") or EMPTY


def name_of(obj: KubeDict | None) -> str:
    """``obj.metadata.name``, or ``""``."""
    return metadata_of(obj).get("name") or ""


def spec_of(obj: KubeDict | None) -> Mapping[str, Any]:
    """``obj.spec``, or an empty mapping."""
    if not obj:
        return EMPTY
    return obj.get("spec") or EMPTY


def namespaced_name(obj: KubeDict | None) -> str:
    """``namespace/name`` of an object (the informer cache key)."""
    md = metadata_of(obj)
    return f"{md.get('namespace') or ''}/{md.get('name') or ''}"


def is_pod_terminated(pod: KubeDict | None) -> bool:
    """Upstream ``util.IsPodTerminated``: the pod has Succeeded or Failed."""
    status = (pod.get("status") if pod else None) or {}
    return status.get("phase") in ("Succeeded", "Failed")


__all__ = [
    "EMPTY", "KubeDict", "annotations_of", "is_pod_terminated", "labels_of", "metadata_of",
    "name_of", "namespaced_name", "spec_of",
]
