"""ClusterColocationProfile: what the pod webhook injects into matching pods.

Corresponds to upstream `apis/config/v1alpha1/cluster_colocation_profile_types.go`.
Cluster-scoped; every profile whose selectors match a new pod is applied by koord-manager's pod
mutating webhook (QoS class, priority, scheduler name, labels, annotations, patch).
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field

from api.base import ApiModel, Int32
from api.core import IntOrString, SchemalessObject
from api.meta import KubeObject, LabelSelector

GROUP = "config.koordinator.sh"
VERSION = "v1alpha1"

# The values the CRD's enum allows for ``qosClass``.
QOS_CLASSES = ("LSE", "LSR", "LS", "BE", "SYSTEM")


def _check_qos_class(value: str) -> str:
    if value and value not in QOS_CLASSES:
        raise ValueError(f"{value!r} is not one of {', '.join(QOS_CLASSES)}")
    return value


# A QoS class name, or "" for none (upstream always writes the field).
QoSClassName = Annotated[str, AfterValidator(_check_qos_class)]


class ClusterColocationProfileSpec(ApiModel):
    """ClusterColocationProfileSpec is a description of a ClusterColocationProfile."""

    # Both selectors match everything when unset.
    namespace_selector: LabelSelector | None = None
    selector: LabelSelector | None = None
    # An integer or "N%"; 100 (always) when unset.
    probability: IntOrString | None = None
    # Upstream writes these two even when empty (no omitempty).
    qos_class: QoSClassName = Field("", json_schema_extra={"enum": list(QOS_CLASSES)})
    priority_class_name: str = ""
    koordinator_priority: Int32 | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    label_keys_mapping: dict[str, str] | None = None
    annotation_keys_mapping: dict[str, str] | None = None
    label_suffixes: dict[str, str] | None = None
    scheduler_name: str | None = None
    # Strategic-merge-patched onto the pod; kept verbatim (nulls included).
    patch: SchemalessObject | None = None


class ClusterColocationProfileStatus(ApiModel):
    """ClusterColocationProfileStatus represents information about the status of a
    ClusterColocationProfile (empty)."""


class ClusterColocationProfile(KubeObject):
    """ClusterColocationProfile is the Schema for the ClusterColocationProfile API"""

    group: ClassVar[str] = GROUP
    version: ClassVar[str] = VERSION
    plural: ClassVar[str] = "clustercolocationprofiles"
    singular: ClassVar[str] = "clustercolocationprofile"
    namespaced: ClassVar[bool] = False
    status_subresource: ClassVar[bool] = True

    spec: ClusterColocationProfileSpec = Field(default_factory=ClusterColocationProfileSpec)
    status: ClusterColocationProfileStatus | None = None


__all__ = [
    "QOS_CLASSES",
    "ClusterColocationProfile",
    "ClusterColocationProfileSpec",
    "ClusterColocationProfileStatus",
    "QoSClassName",
]
