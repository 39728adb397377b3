"""ElasticQuota labels and annotations, and the quota keys of pods.

Corresponds to upstream `apis/extension/elastic_quota.go`. Every key uses
the prefix ``quota.scheduling.koordinator.sh/``. Resource annotations hold JSON ResourceLists;
a missing or empty one reads as an empty list.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from pydantic import TypeAdapter

from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.codec import decode_value
from api.extension.constants import QUOTA_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of
from api.extension.payload import GoResourceList, dump_json

_log = logging.getLogger(__name__)

SYSTEM_QUOTA_NAME = "koordinator-system-quota"
ROOT_QUOTA_NAME = "koordinator-root-quota"
DEFAULT_QUOTA_NAME = "koordinator-default-quota"

LABEL_QUOTA_IS_PARENT = QUOTA_DOMAIN_PREFIX + "/is-parent"
LABEL_QUOTA_PARENT = QUOTA_DOMAIN_PREFIX + "/parent"
LABEL_ALLOW_LENT_RESOURCE = QUOTA_DOMAIN_PREFIX + "/allow-lent-resource"
LABEL_QUOTA_NAME = QUOTA_DOMAIN_PREFIX + "/name"
LABEL_QUOTA_PROFILE = QUOTA_DOMAIN_PREFIX + "/profile"
LABEL_QUOTA_IS_ROOT = QUOTA_DOMAIN_PREFIX + "/is-root"
LABEL_QUOTA_TREE_ID = QUOTA_DOMAIN_PREFIX + "/tree-id"
LABEL_QUOTA_IGNORE_DEFAULT_TREE = QUOTA_DOMAIN_PREFIX + "/ignore-default-tree"
LABEL_PREEMPTIBLE = QUOTA_DOMAIN_PREFIX + "/preemptible"
LABEL_ALLOW_FORCE_UPDATE = QUOTA_DOMAIN_PREFIX + "/allow-force-update"

ANNOTATION_SHARED_WEIGHT = QUOTA_DOMAIN_PREFIX + "/shared-weight"
ANNOTATION_RUNTIME = QUOTA_DOMAIN_PREFIX + "/runtime"
ANNOTATION_REQUEST = QUOTA_DOMAIN_PREFIX + "/request"
ANNOTATION_CHILD_REQUEST = QUOTA_DOMAIN_PREFIX + "/child-request"
ANNOTATION_RESOURCE_KEYS = QUOTA_DOMAIN_PREFIX + "/resource-keys"
ANNOTATION_TOTAL_RESOURCE = QUOTA_DOMAIN_PREFIX + "/total-resource"
ANNOTATION_UNSCHEDULABLE_RESOURCE = QUOTA_DOMAIN_PREFIX + "/unschedulable-resource"
ANNOTATION_QUOTA_NAMESPACES = QUOTA_DOMAIN_PREFIX + "/namespaces"
ANNOTATION_GUARANTEED = QUOTA_DOMAIN_PREFIX + "/guaranteed"
ANNOTATION_ALLOCATED = QUOTA_DOMAIN_PREFIX + "/allocated"
ANNOTATION_NON_PREEMPTIBLE_REQUEST = QUOTA_DOMAIN_PREFIX + "/non-preemptible-request"
ANNOTATION_NON_PREEMPTIBLE_USED = QUOTA_DOMAIN_PREFIX + "/non-preemptible-used"
ANNOTATION_ADMISSION = QUOTA_DOMAIN_PREFIX + "/admission"
ANNOTATION_MAX_STRICT_CHECK_RESOURCE_KEYS = QUOTA_DOMAIN_PREFIX + "/max-strict-check-resource-keys"

# The annotations that hold a ResourceList.
RESOURCE_LIST_ANNOTATIONS = frozenset({
    ANNOTATION_SHARED_WEIGHT, ANNOTATION_RUNTIME, ANNOTATION_REQUEST, ANNOTATION_CHILD_REQUEST,
    ANNOTATION_TOTAL_RESOURCE, ANNOTATION_UNSCHEDULABLE_RESOURCE, ANNOTATION_GUARANTEED,
    ANNOTATION_ALLOCATED, ANNOTATION_NON_PREEMPTIBLE_REQUEST, ANNOTATION_NON_PREEMPTIBLE_USED,
    ANNOTATION_ADMISSION,
})

# Resources an ElasticQuotaProfile manages when it does not say.
DEFAULT_RESOURCE_KEYS = ("cpu", "memory")

_RESOURCE_LIST = TypeAdapter(GoResourceList)
_STRINGS = TypeAdapter(list[str])


# --- labels ----------------------------------------------------------------------------------


def get_parent_quota_name(quota_name: str, labels: Mapping[str, str] | None) -> str:
    """The parent label; empty means the root quota (the root itself has no parent)."""
    parent = (labels or {}).get(LABEL_QUOTA_PARENT, "")
    if parent:
        return parent
    return "" if quota_name == ROOT_QUOTA_NAME else ROOT_QUOTA_NAME


def is_parent_quota(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_QUOTA_IS_PARENT) == "true"


def is_allow_lent_resource(labels: Mapping[str, str] | None) -> bool:
    """Lending is allowed unless the label is exactly ``"false"``."""
    return (labels or {}).get(LABEL_ALLOW_LENT_RESOURCE) != "false"


def is_allow_force_update(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_ALLOW_FORCE_UPDATE) == "true"


def is_tree_root_quota(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_QUOTA_IS_ROOT) == "true"


def get_quota_tree_id(labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(LABEL_QUOTA_TREE_ID, "")


def is_forbidden_modify(quota_name: str) -> bool:
    """The system and root quotas may not be modified."""
    return quota_name in (SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME)


def get_quota_name(pod: KubeDict | None) -> str:
    """The quota a pod is charged to (its ``name`` label), ``""`` if none."""
    return labels_of(pod).get(LABEL_QUOTA_NAME, "")


def is_pod_non_preemptible(pod: KubeDict | None) -> bool:
    """Only exactly ``"false"`` in the ``preemptible`` label makes a pod non-preemptible."""
    return labels_of(pod).get(LABEL_PREEMPTIBLE) == "false"


# --- resource annotations --------------------------------------------------------------------


def parse_quota_resource_list(annotations: Mapping[str, str] | None, key: str) -> dict[str, str]:
    """One of the ResourceList annotations (``runtime``, ``request``...); missing or empty → {}."""
    raw = (annotations or {}).get(key)
    if not raw:
        return {}
    return decode_value(key, raw, _RESOURCE_LIST) or {}


def format_resource_list(resources: Mapping[str, str]) -> str:
    """A ResourceList annotation value: names sorted, quantities canonical."""
    return dump_json(_RESOURCE_LIST, dict(resources))


def parse_shared_weight(annotations: Mapping[str, str] | None) -> dict[str, str] | None:
    """The shared weight; None when the annotation is missing."""
    raw = (annotations or {}).get(ANNOTATION_SHARED_WEIGHT)
    if raw is None:
        return None
    return decode_value(ANNOTATION_SHARED_WEIGHT, raw, _RESOURCE_LIST) or {}


def get_shared_weight(annotations: Mapping[str, str] | None,
                      spec_max: Mapping[str, str]) -> dict[str, str]:
    """The shared weight, or ``spec.max`` when it is missing, invalid or all zero."""
    try:
        weight = parse_shared_weight(annotations)
    except MalformedValueError as exc:
        _log.warning("ignoring quota shared weight: %s", exc)
        weight = None
    if weight and any(quantity_value(q) != 0 for q in weight.values()):
        return weight
    return dict(spec_max)


def _parse_strings(annotations: Mapping[str, str] | None, key: str) -> list[str] | None:
    raw = (annotations or {}).get(key)
    if not raw:
        return None
    return decode_value(key, raw, _STRINGS)


def format_string_list(values: Iterable[str]) -> str:
    """Value of the JSON string-list annotations (namespaces, resource keys)."""
    return dump_json(_STRINGS, list(values))


def parse_quota_namespaces(annotations: Mapping[str, str] | None) -> list[str]:
    """Namespaces bound to the quota; missing → none."""
    return _parse_strings(annotations, ANNOTATION_QUOTA_NAMESPACES) or []


def get_quota_namespaces(annotations: Mapping[str, str] | None) -> list[str]:
    """Namespaces bound to the quota; an invalid value means none."""
    try:
        return parse_quota_namespaces(annotations)
    except MalformedValueError as exc:
        _log.warning("ignoring quota namespaces: %s", exc)
        return []


def parse_resource_keys(annotations: Mapping[str, str] | None) -> list[str]:
    """The resources an ElasticQuotaProfile manages; missing → cpu and memory."""
    keys = _parse_strings(annotations, ANNOTATION_RESOURCE_KEYS)
    return list(DEFAULT_RESOURCE_KEYS) if keys is None else keys


def parse_max_strict_check_resource_keys(annotations: Mapping[str, str] | None) -> list[str]:
    """Resources strictly checked against ``max``; missing → none."""
    return _parse_strings(annotations, ANNOTATION_MAX_STRICT_CHECK_RESOURCE_KEYS) or []


__all__ = [
    "ANNOTATION_ADMISSION", "ANNOTATION_ALLOCATED", "ANNOTATION_CHILD_REQUEST",
    "ANNOTATION_GUARANTEED", "ANNOTATION_MAX_STRICT_CHECK_RESOURCE_KEYS",
    "ANNOTATION_NON_PREEMPTIBLE_REQUEST", "ANNOTATION_NON_PREEMPTIBLE_USED",
    "ANNOTATION_QUOTA_NAMESPACES", "ANNOTATION_REQUEST", "ANNOTATION_RESOURCE_KEYS",
    "ANNOTATION_RUNTIME", "ANNOTATION_SHARED_WEIGHT", "ANNOTATION_TOTAL_RESOURCE",
    "ANNOTATION_UNSCHEDULABLE_RESOURCE", "DEFAULT_QUOTA_NAME", "DEFAULT_RESOURCE_KEYS",
    "LABEL_ALLOW_FORCE_UPDATE", "LABEL_ALLOW_LENT_RESOURCE", "LABEL_PREEMPTIBLE",
    "LABEL_QUOTA_IGNORE_DEFAULT_TREE", "LABEL_QUOTA_IS_PARENT", "LABEL_QUOTA_IS_ROOT",
    "LABEL_QUOTA_NAME", "LABEL_QUOTA_PARENT", "LABEL_QUOTA_PROFILE", "LABEL_QUOTA_TREE_ID",
    "RESOURCE_LIST_ANNOTATIONS", "ROOT_QUOTA_NAME", "SYSTEM_QUOTA_NAME", "format_resource_list",
    "format_string_list", "get_parent_quota_name", "get_quota_name", "get_quota_namespaces",
    "get_quota_tree_id", "get_shared_weight", "is_allow_force_update", "is_allow_lent_resource",
    "is_forbidden_modify", "is_parent_quota", "is_pod_non_preemptible", "is_tree_root_quota",
    "parse_max_strict_check_resource_keys", "parse_quota_namespaces", "parse_quota_resource_list",
    "parse_resource_keys", "parse_shared_weight",
]
