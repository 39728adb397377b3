"""Which REST paths serve a kind: group, version, plural, scope.

Corresponds to apimachinery's ``schema.GroupVersionResource`` plus the REST mapping a client-go
``RESTMapper`` provides, for the built-in kinds Koordinator's components use and for every
Koordinator CRD modelled in ``api`` (``NODE_METRICS``, ...: declared here once, from the models,
for every component and test to import). A ``Resource`` of a CRD model carries the model, so
typed clients and informers can decode into it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from api.analysis.v1alpha1 import Recommendation
from api.config.v1alpha1 import ClusterColocationProfile
from api.meta import KubeObject
from api.quota.v1alpha1 import ElasticQuotaProfile
from api.scheduling.v1alpha1 import (
    ClusterNetworkTopology,
    Device,
    PodMigrationJob,
    Reservation,
    ScheduleExplanation,
)
from api.slo.v1alpha1 import NodeMetric, NodeSLO
from api.thirdparty.noderesourcetopology.v1alpha1 import NodeResourceTopology
from api.thirdparty.schedulerplugins.v1alpha1 import ElasticQuota, PodGroup


@dataclass(frozen=True)
class Resource:
    """One resource of one API group version."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    model: type[KubeObject] | None = field(default=None, compare=False, repr=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gvr(self) -> tuple[str, str, str]:
        return (self.group, self.version, self.plural)

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group}" if self.group else \
            f"{self.plural}.{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The URL path: ``/api/v1/namespaces/ns/pods/name/status`` and the like.

        ``namespace`` is ignored for cluster-scoped resources; ``None`` (or empty) for a
        namespaced resource means all namespaces (only valid for list and watch).
        """
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"{self.kind}: resource name may not be empty")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    @classmethod
    def for_model(cls, model: type[KubeObject]) -> Resource:
        """The resource serving a Koordinator CRD model from ``api``."""
        if not model.group or not model.plural:
            raise ValueError(f"{model.__name__} is not a top-level kind")
        return cls(model.group, model.version, model.plural, model.__name__, model.namespaced,
                   model)

    def decode(self, obj: dict[str, Any]) -> Any:
        """The object as this resource's model when it has one, else unchanged."""
        if self.model is None:
            return obj
        return self.model.model_validate(obj)


def _core(plural: str, kind: str, namespaced: bool = True) -> Resource:
    return Resource("", "v1", plural, kind, namespaced)


PODS = _core("pods", "Pod")
NODES = _core("nodes", "Node", False)
NAMESPACES = _core("namespaces", "Namespace", False)
CONFIGMAPS = _core("configmaps", "ConfigMap")
SECRETS = _core("secrets", "Secret")
SERVICES = _core("services", "Service")
ENDPOINTS = _core("endpoints", "Endpoints")
EVENTS = _core("events", "Event")
PERSISTENT_VOLUMES = _core("persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = _core("persistentvolumeclaims", "PersistentVolumeClaim")
SERVICE_ACCOUNTS = _core("serviceaccounts", "ServiceAccount")
RESOURCE_QUOTAS = _core("resourcequotas", "ResourceQuota")
REPLICATION_CONTROLLERS = _core("replicationcontrollers", "ReplicationController")

EVENTS_V1 = Resource("events.k8s.io", "v1", "events", "Event", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets",
                                  "PodDisruptionBudget", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
CSI_NODES = Resource("storage.k8s.io", "v1", "csinodes", "CSINode", False)
CUSTOM_RESOURCE_DEFINITIONS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                       "CustomResourceDefinition", False)
MUTATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", False)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", False)
_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(_RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", True)
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", False)

BUILTIN: tuple[Resource, ...] = (
    PODS, NODES, NAMESPACES, CONFIGMAPS, SECRETS, SERVICES, ENDPOINTS, EVENTS,
    PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, SERVICE_ACCOUNTS, RESOURCE_QUOTAS,
    REPLICATION_CONTROLLERS, EVENTS_V1, LEASES, PRIORITY_CLASSES, POD_DISRUPTION_BUDGETS,
    DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS, DAEMON_SETS, JOBS, STORAGE_CLASSES, CSI_NODES,
    CUSTOM_RESOURCE_DEFINITIONS, MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS, ROLES, ROLE_BINDINGS, CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS,
)

# The CRDs Koordinator's components use (NodeResourceTopology at v1alpha1, the version upstream's
# clients use; ElasticQuota and PodGroup from scheduler-plugins).
NODE_METRICS = Resource.for_model(NodeMetric)
NODE_SLOS = Resource.for_model(NodeSLO)
CLUSTER_COLOCATION_PROFILES = Resource.for_model(ClusterColocationProfile)
ELASTIC_QUOTA_PROFILES = Resource.for_model(ElasticQuotaProfile)
RESERVATIONS = Resource.for_model(Reservation)
POD_MIGRATION_JOBS = Resource.for_model(PodMigrationJob)
DEVICES = Resource.for_model(Device)
CLUSTER_NETWORK_TOPOLOGIES = Resource.for_model(ClusterNetworkTopology)
SCHEDULE_EXPLANATIONS = Resource.for_model(ScheduleExplanation)
RECOMMENDATIONS = Resource.for_model(Recommendation)
NODE_RESOURCE_TOPOLOGIES = Resource.for_model(NodeResourceTopology)
ELASTIC_QUOTAS = Resource.for_model(ElasticQuota)
POD_GROUPS = Resource.for_model(PodGroup)


def for_kind(api_version: str, kind: str) -> Resource | None:
    """The resource of a built-in kind or of a Koordinator CRD modelled in ``api``."""
    for r in BUILTIN:
        if r.api_version == api_version and r.kind == kind:
            return r
    from api.loader import kind_for  # imports every API group

    model = kind_for(api_version, kind)
    return Resource.for_model(model) if model is not None else None


def for_object(obj: dict[str, Any] | KubeObject) -> Resource:
    """The resource of an object, from its apiVersion and kind."""
    if isinstance(obj, KubeObject):
        return Resource.for_model(type(obj))
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    r = for_kind(api_version, kind)
    if r is None:
        raise LookupError(f"no resource known for kind {kind!r} in apiVersion {api_version!r}")
    return r


__all__ = [
    "BUILTIN", "CLUSTER_COLOCATION_PROFILES", "CLUSTER_NETWORK_TOPOLOGIES", "CLUSTER_ROLES",
    "CLUSTER_ROLE_BINDINGS", "CONFIGMAPS",
    "CSI_NODES", "CUSTOM_RESOURCE_DEFINITIONS", "DAEMON_SETS", "DEPLOYMENTS", "DEVICES",
    "ELASTIC_QUOTAS", "ELASTIC_QUOTA_PROFILES", "ENDPOINTS", "EVENTS", "EVENTS_V1", "JOBS",
    "LEASES", "MUTATING_WEBHOOK_CONFIGURATIONS", "NAMESPACES", "NODES", "NODE_METRICS",
    "NODE_RESOURCE_TOPOLOGIES", "NODE_SLOS", "PERSISTENT_VOLUMES", "PERSISTENT_VOLUME_CLAIMS",
    "PODS", "POD_DISRUPTION_BUDGETS", "POD_GROUPS", "POD_MIGRATION_JOBS", "PRIORITY_CLASSES",
    "RECOMMENDATIONS", "REPLICATION_CONTROLLERS", "REPLICA_SETS", "RESERVATIONS",
    "RESOURCE_QUOTAS", "ROLES", "ROLE_BINDINGS", "Resource", "SCHEDULE_EXPLANATIONS", "SECRETS",
    "SERVICES", "SERVICE_ACCOUNTS", "STATEFUL_SETS", "STORAGE_CLASSES",
    "VALIDATING_WEBHOOK_CONFIGURATIONS", "for_kind", "for_object"
]
