"""Multi-scheduler keys: the internal scheduler-name label and scheduling hints.

Corresponds to upstream `apis/extension/multi_scheduler.go`.
The hint is read from ``internal.scheduling.koordinator.sh/scheduling-hint``, or from the
deprecated ``scheduling.koordinator.sh/scheduling-hint`` when the internal key is missing or
empty; an empty value is no hint.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.extension.codec import decode_model
from api.extension.constants import INTERNAL_SCHEDULING_DOMAIN_PREFIX, SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of, spec_of
from api.extension.payload import AnyMap, GoPayload

LABEL_SCHEDULER_NAME = SCHEDULING_DOMAIN_PREFIX + "/scheduler-name"
ANNOTATION_SCHEDULING_HINT = INTERNAL_SCHEDULING_DOMAIN_PREFIX + "/scheduling-hint"
DEPRECATED_ANNOTATION_SCHEDULING_HINT = SCHEDULING_DOMAIN_PREFIX + "/scheduling-hint"
ANNOTATION_ORIGINAL_SCHEDULER_NAME = (
    INTERNAL_SCHEDULING_DOMAIN_PREFIX + "/original-scheduler-name")


def get_scheduler_name(pod: KubeDict | None) -> str:
    """The label when present (even empty), else ``spec.schedulerName``."""
    labels = labels_of(pod)
    if LABEL_SCHEDULER_NAME in labels:
        return labels[LABEL_SCHEDULER_NAME]
    return spec_of(pod).get("schedulerName") or ""


class SchedulingHint(GoPayload):
    """Required nodes, preferred nodes in order, and free-form extensions for plugins."""

    node_names: list[str] | None = None
    preferred_node_names: list[str] | None = None
    extensions: AnyMap | None = None


def parse_scheduling_hint(annotations: Mapping[str, str] | None) -> SchedulingHint | None:
    """The hint, or None when neither key holds a non-empty value."""
    for key in (ANNOTATION_SCHEDULING_HINT, DEPRECATED_ANNOTATION_SCHEDULING_HINT):
        raw = (annotations or {}).get(key)
        if raw:
            return decode_model(key, raw, SchedulingHint)
    return None


def format_scheduling_hint(hint: SchedulingHint) -> str:
    return hint.to_go_json()


__all__ = [
    "ANNOTATION_ORIGINAL_SCHEDULER_NAME", "ANNOTATION_SCHEDULING_HINT",
    "DEPRECATED_ANNOTATION_SCHEDULING_HINT", "LABEL_SCHEDULER_NAME", "SchedulingHint",
    "format_scheduling_hint", "get_scheduler_name", "parse_scheduling_hint",
]
