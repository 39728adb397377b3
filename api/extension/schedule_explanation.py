"""Labels of ScheduleExplanation: the questioned object and the topology to explain by.

Corresponds to upstream `apis/extension/schedule_explanation.go`.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.extension.constants import SCHEDULING_DOMAIN_PREFIX
from api.extension.objects import KubeDict, labels_of

# On a ScheduleExplanation: the key of the pod, job or gang it explains.
LABEL_QUESTIONED_OBJECT_KEY = SCHEDULING_DOMAIN_PREFIX + "/questioned-object-key"
# On a pod: the topology key its explanation is grouped by.
LABEL_TOPOLOGY_KEY_TO_EXPLAIN = SCHEDULING_DOMAIN_PREFIX + "/topology-key-to-explain"


def get_explanation_key(labels: Mapping[str, str] | None) -> str:
    return (labels or {}).get(LABEL_QUESTIONED_OBJECT_KEY, "")


def get_topology_key_to_explain(pod: KubeDict | None) -> str:
    return labels_of(pod).get(LABEL_TOPOLOGY_KEY_TO_EXPLAIN, "")


__all__ = [
    "LABEL_QUESTIONED_OBJECT_KEY", "LABEL_TOPOLOGY_KEY_TO_EXPLAIN", "get_explanation_key",
    "get_topology_key_to_explain",
]
