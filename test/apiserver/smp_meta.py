"""Strategic-merge-patch metadata of the built-in types: which lists merge, and by which key.

Corresponds to the ``patchStrategy``/``patchMergeKey`` struct tags of upstream
``k8s.io/api`` (core/v1, apps/v1, batch/v1, policy/v1, ...). A list not named here has no
patch strategy and is replaced as a whole (``tolerations``, ``taints``, ``envFrom``,
``containerStatuses`` ...), exactly as upstream.

A struct is a dict ``field -> Meta``. Only fields on the path to a merging list are listed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Meta:
    """How one field patches: a nested struct, or a list with strategy and merge key."""

    strategies: frozenset[str] = frozenset()  # "merge", "retainKeys"
    merge_key: str | None = None
    struct: dict[str, Meta] | None = None  # element type (lists) or field type (structs)
    is_list: bool = False


def S(struct: dict[str, Meta], *strategies: str) -> Meta:
    """A nested struct (optionally itself with retainKeys)."""
    return Meta(frozenset(strategies), None, struct, False)


def L(key: str | None, struct: dict[str, Meta] | None = None, *extra: str) -> Meta:
    """A list with strategy merge (by ``key``; None for a list of primitives)."""
    return Meta(frozenset(("merge",) + extra), key, struct, True)


OBJECT_META: dict[str, Meta] = {"finalizers": L(None), "ownerReferences": L("uid")}
CONDITIONS = L("type")

CONTAINER: dict[str, Meta] = {
    "ports": L("containerPort"),
    "env": L("name"),
    "volumeMounts": L("mountPath"),
    "volumeDevices": L("devicePath"),
}
POD_SPEC: dict[str, Meta] = {
    "volumes": L("name", None, "retainKeys"),
    "initContainers": L("name", CONTAINER),
    "containers": L("name", CONTAINER),
    "ephemeralContainers": L("name", CONTAINER),
    "imagePullSecrets": L("name"),
    "hostAliases": L("ip"),
    "topologySpreadConstraints": L("topologyKey"),
    "schedulingGates": L("name"),
    "resourceClaims": L("name", None, "retainKeys"),
}
POD_STATUS: dict[str, Meta] = {
    "conditions": CONDITIONS,
    "podIPs": L("ip"),
    "hostIPs": L("ip"),
    "resourceClaimStatuses": L("name", None, "retainKeys"),
}
POD_TEMPLATE: dict[str, Meta] = {"metadata": S(OBJECT_META), "spec": S(POD_SPEC)}


def _obj(
    spec: dict[str, Meta] | None = None,
    status: dict[str, Meta] | None = None,
    **extra: Meta,
) -> dict[str, Meta]:
    out: dict[str, Meta] = {"metadata": S(OBJECT_META)}
    if spec is not None:
        out["spec"] = S(spec)
    if status is not None:
        out["status"] = S(status)
    out.update(extra)
    return out


_CONDS = {"conditions": CONDITIONS}

SCHEMAS: dict[tuple[str, str], dict[str, Meta]] = {
    ("", "pods"): _obj(POD_SPEC, POD_STATUS),
    ("", "podtemplates"): _obj(template=S(POD_TEMPLATE)),
    ("", "nodes"): _obj({"podCIDRs": L(None)}, {"conditions": CONDITIONS, "addresses": L("type")}),
    ("", "services"): _obj({"ports": L("port")}, _CONDS),
    ("", "serviceaccounts"): _obj(secrets=L("name")),
    ("", "namespaces"): _obj(None, _CONDS),
    ("", "persistentvolumeclaims"): _obj(None, _CONDS),
    ("", "replicationcontrollers"): _obj({"template": S(POD_TEMPLATE)}, _CONDS),
    ("apps", "deployments"): _obj(
        {"template": S(POD_TEMPLATE), "strategy": S({}, "retainKeys")}, _CONDS
    ),
    ("apps", "replicasets"): _obj({"template": S(POD_TEMPLATE)}, _CONDS),
    ("apps", "daemonsets"): _obj({"template": S(POD_TEMPLATE)}, _CONDS),
    ("apps", "statefulsets"): _obj({"template": S(POD_TEMPLATE)}, _CONDS),
    ("batch", "jobs"): _obj({"template": S(POD_TEMPLATE)}, _CONDS),
    ("batch", "cronjobs"): _obj({"jobTemplate": S({"spec": S({"template": S(POD_TEMPLATE)})})}),
    ("policy", "poddisruptionbudgets"): _obj(None, _CONDS),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _obj(None, _CONDS),
}

DEFAULT: dict[str, Meta] = _obj()


def schema_for(storage: tuple[str, str]) -> dict[str, Meta]:
    return SCHEMAS.get(storage, DEFAULT)
