"""What resources are served: group/version/kind, scope, verbs, names and subresources.

Corresponds to the REST storage registrations of upstream kube-apiserver
(``pkg/registry/...``) as far as discovery, routing and field selectors need them. Custom
resources get a ResourceInfo from their CRD (see ``crds.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .selectors import path_getter

ALL_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class SubresourceInfo:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None  # of the kind, when it differs from the parent's group/version
    version: str | None = None


@dataclass
class ResourceInfo:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: dict[str, SubresourceInfo] = field(default_factory=dict)
    # Storage identity: every version of a resource (and core/v1 + events.k8s.io/v1 events)
    # shares one collection.
    storage: tuple[str, str] = ("", "")
    # Extra field selectors besides metadata.name and metadata.namespace.
    fields: dict[str, Callable[[Any], str]] = field(default_factory=dict)
    generation: bool = False  # metadata.generation tracks spec changes
    strategic: bool = True  # accepts application/strategic-merge-patch+json
    crd: dict[str, Any] | None = None  # the CRD serving this resource
    storage_version: str = ""  # the version objects are stored at (CRs)
    # Converters between the served version's form and the stored form (events.k8s.io).
    to_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    from_storage: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()
        if self.storage == ("", ""):
            self.storage = (self.group, self.plural)
        if not self.storage_version:
            self.storage_version = self.version

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gv(self) -> tuple[str, str]:
        return (self.group, self.version)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    def field_getters(self) -> dict[str, Callable[[Any], str]]:
        out = {"metadata.name": path_getter("metadata.name")}
        if self.namespaced:
            out["metadata.namespace"] = path_getter("metadata.namespace")
        out.update(self.fields)
        return out


def _status(kind: str) -> dict[str, SubresourceInfo]:
    return {"status": SubresourceInfo("status", kind, STATUS_VERBS)}


def _scale() -> SubresourceInfo:
    return SubresourceInfo("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")


def _fields(*paths: str) -> dict[str, Callable[[Any], str]]:
    return {p: path_getter(p) for p in paths}


def _pod_ips(obj: Any) -> str:
    ips = (obj.get("status") or {}).get("podIPs") or []
    return ",".join(i.get("ip", "") for i in ips)


def builtin_resources() -> list[ResourceInfo]:
    """The built-in resources, in discovery order."""
    R = ResourceInfo
    pod_sub = {
        **_status("Pod"),
        "binding": SubresourceInfo("binding", "Binding", ("create",)),
        "eviction": SubresourceInfo("eviction", "Eviction", ("create",), "policy", "v1"),
        "log": SubresourceInfo("log", "Pod", ("get",)),
        "ephemeralcontainers": SubresourceInfo("ephemeralcontainers", "Pod", STATUS_VERBS),
    }
    pod_fields = _fields(
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
    pod_fields["status.podIPs"] = _pod_ips
    event_fields = _fields(
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    )
    event_fields["source"] = path_getter("source.component")
    core = [
        R("", "v1", "bindings", "Binding", True, verbs=("create",)),
        R("", "v1", "configmaps", "ConfigMap", True, short_names=("cm",)),
        R("", "v1", "endpoints", "Endpoints", True, short_names=("ep",)),
        R("", "v1", "events", "Event", True, short_names=("ev",), fields=event_fields),
        R("", "v1", "limitranges", "LimitRange", True, short_names=("limits",)),
        R(
            "",
            "v1",
            "namespaces",
            "Namespace",
            False,
            short_names=("ns",),
            verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
            subresources={
                **_status("Namespace"),
                "finalize": SubresourceInfo("finalize", "Namespace", ("update",)),
            },
            fields=_fields("status.phase"),
        ),
        R(
            "",
            "v1",
            "nodes",
            "Node",
            False,
            short_names=("no",),
            subresources=_status("Node"),
            fields=_fields("spec.unschedulable"),
        ),
        R(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            True,
            short_names=("pvc",),
            subresources=_status("PersistentVolumeClaim"),
        ),
        R(
            "",
            "v1",
            "persistentvolumes",
            "PersistentVolume",
            False,
            short_names=("pv",),
            subresources=_status("PersistentVolume"),
        ),
        R(
            "",
            "v1",
            "pods",
            "Pod",
            True,
            short_names=("po",),
            categories=("all",),
            subresources=pod_sub,
            fields=pod_fields,
        ),
        R("", "v1", "podtemplates", "PodTemplate", True),
        R(
            "",
            "v1",
            "replicationcontrollers",
            "ReplicationController",
            True,
            short_names=("rc",),
            categories=("all",),
            subresources={**_status("ReplicationController"), "scale": _scale()},
            generation=True,
        ),
        R(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            True,
            short_names=("quota",),
            subresources=_status("ResourceQuota"),
        ),
        R("", "v1", "secrets", "Secret", True, fields=_fields("type")),
        R("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=("sa",),
          subresources={"token": SubresourceInfo("token", "TokenRequest", ("create",),
                                                 "authentication.k8s.io", "v1")}),
        R(
            "",
            "v1",
            "services",
            "Service",
            True,
            short_names=("svc",),
            categories=("all",),
            subresources=_status("Service"),
        ),
    ]
    apps = [
        R("apps", "v1", "controllerrevisions", "ControllerRevision", True),
        R(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            True,
            short_names=("ds",),
            categories=("all",),
            subresources=_status("DaemonSet"),
            generation=True,
        ),
        R(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            True,
            short_names=("deploy",),
            categories=("all",),
            subresources={**_status("Deployment"), "scale": _scale()},
            generation=True,
        ),
        R(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            True,
            short_names=("rs",),
            categories=("all",),
            subresources={**_status("ReplicaSet"), "scale": _scale()},
            generation=True,
            fields=_fields("status.replicas"),
        ),
        R(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            True,
            short_names=("sts",),
            categories=("all",),
            subresources={**_status("StatefulSet"), "scale": _scale()},
            generation=True,
        ),
    ]
    batch = [
        R(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            True,
            short_names=("cj",),
            categories=("all",),
            subresources=_status("CronJob"),
            generation=True,
        ),
        R(
            "batch",
            "v1",
            "jobs",
            "Job",
            True,
            categories=("all",),
            subresources=_status("Job"),
            generation=True,
            fields=_fields("status.successful"),
        ),
    ]
    create_only = ("create",)
    others = [
        R("coordination.k8s.io", "v1", "leases", "Lease", True),
        # Reviews (reviews.py): answered, never stored.
        R("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", False,
          verbs=create_only),
        R("authorization.k8s.io", "v1", "localsubjectaccessreviews",
          "LocalSubjectAccessReview", True, verbs=create_only),
        R("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
          False, verbs=create_only),
        R("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False,
          verbs=create_only),
        R("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
          False, verbs=create_only),
        R(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            True,
            short_names=("pdb",),
            subresources=_status("PodDisruptionBudget"),
            generation=True,
        ),
        R(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
            False,
            short_names=("pc",),
        ),
        R(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            True,
            short_names=("ev",),
            storage=("", "events"),
            fields=event_fields,
        ),
        R(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            False,
        ),
        R("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        R("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        R("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        R(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            "StorageClass",
            False,
            short_names=("sc",),
        ),
        R("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True),
        R("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", False),
        R(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            False,
            short_names=("crd", "crds"),
            subresources=_status("CustomResourceDefinition"),
            generation=True,
        ),
        R(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
            generation=True,
        ),
        R(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            False,
            categories=("api-extensions",),
            generation=True,
        ),
    ]
    return core + apps + batch + others


# Group preference order in /apis, roughly as kube-apiserver lists them.
GROUP_ORDER = [
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
]
