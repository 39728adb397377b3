"""Keys on ClusterColocationProfile objects and the sample namespace label.

Corresponds to upstream `apis/extension/cluster_colocation_profile.go`.
"""

from __future__ import annotations

from collections.abc import Mapping

from api.extension.constants import CONFIG_DOMAIN_PREFIX, DOMAIN_PREFIX

# Presence only: the profile does not rewrite the pod's resources.
ANNOTATION_SKIP_UPDATE_RESOURCES = CONFIG_DOMAIN_PREFIX + "/skip-update-resources"
# "true": the profile is managed by a controller.
LABEL_CONTROLLER_MANAGED = CONFIG_DOMAIN_PREFIX + "/controller-managed"
# Namespace label used by upstream's spark-jobs sample profile (a convention, not an API).
LABEL_ENABLE_COLOCATION = DOMAIN_PREFIX + "enable-colocation"


def should_skip_update_resources(annotations: Mapping[str, str] | None) -> bool:
    return ANNOTATION_SKIP_UPDATE_RESOURCES in (annotations or {})


def is_controller_managed(labels: Mapping[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_CONTROLLER_MANAGED) == "true"


__all__ = [
    "ANNOTATION_SKIP_UPDATE_RESOURCES", "LABEL_CONTROLLER_MANAGED", "LABEL_ENABLE_COLOCATION",
    "is_controller_managed", "should_skip_update_resources",
]
