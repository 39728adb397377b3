"""Per-resource behaviour of the built-in types: defaulting, create/update preparation,
validation and immutability.

Corresponds to upstream ``pkg/apis/*/v1/defaults.go`` (scheme defaulting), the registry
strategies ``pkg/registry/<group>/<resource>/strategy.go`` (``PrepareForCreate``,
``PrepareForUpdate``, ``Validate``) and the parts of ``pkg/apis/core/validation`` that callers
notice. Validation here is deliberately partial: required fields, names and the immutability
rules that catch controller bugs, not every field's format.
"""

from __future__ import annotations

import base64
import ipaddress
from collections.abc import Callable
from typing import Any

from .meta import (
    Cause,
    NameFn,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    name_is_path_segment,
)

Obj = dict[str, Any]


def _required(path: str) -> Cause:
    return ("FieldValueRequired", path, "Required value")


# -- pods -------------------------------------------------------------------------------------

def _default_container(c: Obj) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image") or ""
    if "imagePullPolicy" not in c:
        tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
        latest = image.endswith(":latest") or not tagged
        c["imagePullPolicy"] = "Always" if latest else "IfNotPresent"
    res = c.setdefault("resources", {})
    limits = res.get("limits") or {}
    if limits:
        req = res.setdefault("requests", {})
        for k, v in limits.items():
            req.setdefault(k, v)
    for p in c.get("ports") or []:
        p.setdefault("protocol", "TCP")
    for e in c.get("env") or []:
        vf = e.get("valueFrom") or {}
        fr = vf.get("fieldRef")
        if fr is not None:
            fr.setdefault("apiVersion", "v1")


def default_pod_spec(spec: Obj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    for c in spec.get("initContainers") or []:
        _default_container(c)
    for c in spec.get("containers") or []:
        _default_container(c)
    for v in spec.get("volumes") or []:
        if len(v) == 1 and "name" in v:
            v["emptyDir"] = {}
        cfg = v.get("configMap") or v.get("secret")
        if isinstance(cfg, dict):
            cfg.setdefault("defaultMode", 420)


def _qty_equal(a: Any, b: Any) -> bool:
    if str(a) == str(b):
        return True
    from kubernetes.utils.quantity import parse_quantity

    try:
        return parse_quantity(a) == parse_quantity(b)
    except ValueError:
        return False


def pod_qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort, as upstream ``qos.GetPodQOS``."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        req = {k: v for k, v in (res.get("requests") or {}).items() if k in ("cpu", "memory")}
        lim = {k: v for k, v in (res.get("limits") or {}).items() if k in ("cpu", "memory")}
        if req or lim:
            any_set = True
        if set(lim) != {"cpu", "memory"}:
            guaranteed = False
            continue
        for k in ("cpu", "memory"):
            if k in req and not _qty_equal(req[k], lim[k]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def pod_default(obj: Obj) -> None:
    default_pod_spec(obj.setdefault("spec", {}))


def pod_prepare_create(obj: Obj) -> None:
    spec = obj["spec"]
    obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(spec)}


def _validate_containers(spec: Obj, path: str, causes: list[Cause]) -> None:
    cs = spec.get("containers")
    if not cs:
        causes.append(_required(f"{path}.containers"))
    seen: set[str] = set()
    for kind in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(kind) or []):
            p = f"{path}.{kind}[{i}]"
            name = c.get("name")
            if not name:
                causes.append(_required(f"{p}.name"))
            elif name in seen:
                causes.append(("FieldValueDuplicate", f"{p}.name", f'Duplicate value: "{name}"'))
            else:
                seen.add(name)
            if not c.get("image"):
                causes.append(_required(f"{p}.image"))


def pod_validate(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    _validate_containers(obj.get("spec") or {}, "spec", causes)
    return causes


# Fields of a pod's spec that an update may change (upstream ValidatePodUpdate).
def _mask_pod_spec(spec: Obj) -> Obj:
    s = dict(spec)
    for k in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds",
              "schedulingGates"):
        s.pop(k, None)
    for kind in ("containers", "initContainers"):
        if kind in s:
            s[kind] = [{k: v for k, v in c.items() if k not in ("image", "resources")}
                       for c in s[kind]]
    return s


def pod_validate_update(new: Obj, old: Obj) -> list[Cause]:
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if _mask_pod_spec(ns) != _mask_pod_spec(os_):
        return [("FieldValueForbidden", "spec",
                 "Forbidden: pod updates may not change fields other than `spec.containers[*]"
                 ".image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                 "`spec.tolerations` (only additions to existing tolerations),"
                 "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                 "previously negative)")]
    old_tol = os_.get("tolerations") or []
    new_tol = ns.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        return [("FieldValueForbidden", "spec.tolerations",
                 "Forbidden: existing toleration can not be modified except its "
                 "tolerationSeconds")]
    old_gates = os_.get("schedulingGates") or []
    new_gates = ns.get("schedulingGates") or []
    if any(g not in old_gates for g in new_gates):
        return [("FieldValueForbidden", "spec.schedulingGates",
                 "Forbidden: only deletion is allowed, but found new scheduling gate")]
    return []


# -- namespaces, services, secrets, workloads -------------------------------------------------

def namespace_prepare_create(obj: Obj) -> None:
    obj.setdefault("spec", {})["finalizers"] = ["kubernetes"]
    obj["status"] = {"phase": "Active"}
    md = obj["metadata"]
    md.setdefault("labels", {})["kubernetes.io/metadata.name"] = md["name"]


def namespace_prepare_update(new: Obj, old: Obj) -> None:
    new.setdefault("metadata", {}).setdefault("labels", {})[
        "kubernetes.io/metadata.name"] = old["metadata"]["name"]
    new["spec"] = old.get("spec", {})


class ClusterIPs:
    """Allocates service ClusterIPs from 10.96.0.0/12, like the service IP allocator."""

    def __init__(self) -> None:
        self.net = ipaddress.ip_network("10.96.0.0/12")
        self.next = 10
        self.used: set[str] = {"10.96.0.1", "10.96.0.10"}

    def allocate(self) -> str:
        while True:
            ip = str(self.net[self.next])
            self.next += 1
            if ip not in self.used:
                self.used.add(ip)
                return ip


def service_default(obj: Obj, ips: ClusterIPs) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for p in spec.get("ports") or []:
        p.setdefault("protocol", "TCP")
        p.setdefault("targetPort", p.get("port"))
    if spec["type"] != "ExternalName":
        if "clusterIP" not in spec:
            spec["clusterIP"] = ips.allocate()
        if spec["clusterIP"] != "None":
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")


def secret_default(obj: Obj) -> None:
    obj.setdefault("type", "Opaque")
    sd = obj.pop("stringData", None)
    if sd:
        data = obj.setdefault("data", {}) or {}
        obj["data"] = data
        for k, v in sd.items():
            data[k] = base64.b64encode(str(v).encode()).decode()


def secret_validate(obj: Obj) -> list[Cause]:
    """A ServiceAccount token Secret names its ServiceAccount (core validation)."""
    ann = obj["metadata"].get("annotations") or {}
    if obj.get("type") == "kubernetes.io/service-account-token" and \
            not ann.get("kubernetes.io/service-account.name"):
        return [("FieldValueRequired",
                 "metadata.annotations[kubernetes.io/service-account.name]", "Required value")]
    return []


def _workload_default(obj: Obj, replicas: bool = True) -> None:
    spec = obj.setdefault("spec", {})
    if replicas:
        spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        default_pod_spec(tmpl.setdefault("spec", {}))


def deployment_default(obj: Obj) -> None:
    _workload_default(obj)
    spec = obj["spec"]
    spec.setdefault("progressDeadlineSeconds", 600)
    strat = spec.setdefault("strategy", {})
    strat.setdefault("type", "RollingUpdate")
    if strat["type"] == "RollingUpdate":
        ru = strat.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", "25%")
        ru.setdefault("maxSurge", "25%")


def daemonset_default(obj: Obj) -> None:
    _workload_default(obj, replicas=False)
    us = obj["spec"].setdefault("updateStrategy", {})
    us.setdefault("type", "RollingUpdate")
    if us["type"] == "RollingUpdate":
        ru = us.setdefault("rollingUpdate", {})
        ru.setdefault("maxUnavailable", 1)
        ru.setdefault("maxSurge", 0)


def priorityclass_default(obj: Obj) -> None:
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")


def priorityclass_validate(obj: Obj) -> list[Cause]:
    if not isinstance(obj.get("value"), int):
        return [_required("value")]
    return []


def priorityclass_validate_update(new: Obj, old: Obj) -> list[Cause]:
    if new.get("value") != old.get("value"):
        return [("FieldValueForbidden", "value", "Forbidden: may not be changed in an update.")]
    return []


def workload_validate(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    if "selector" not in spec:
        causes.append(_required("spec.selector"))
    tmpl = spec.get("template")
    if not isinstance(tmpl, dict):
        causes.append(_required("spec.template"))
    else:
        _validate_containers(tmpl.get("spec") or {}, "spec.template.spec", causes)
    return causes


class Strategy:
    """Hooks for one resource; every hook is optional."""

    def __init__(
        self,
        default: Callable[[Obj], None] | None = None,
        prepare_create: Callable[[Obj], None] | None = None,
        prepare_update: Callable[[Obj, Obj], None] | None = None,
        validate: Callable[[Obj], list[Cause]] | None = None,
        validate_update: Callable[[Obj, Obj], list[Cause]] | None = None,
        name_fn: NameFn = name_is_dns_subdomain,
        create_on_update: bool = False,
        keep_status_on_create: bool = False,
    ) -> None:
        self.default = default
        self.prepare_create = prepare_create
        self.prepare_update = prepare_update
        self.validate = validate
        self.validate_update = validate_update
        self.name_fn = name_fn
        self.create_on_update = create_on_update
        self.keep_status_on_create = keep_status_on_create


def builtin_strategies(ips: ClusterIPs) -> dict[tuple[str, str], Strategy]:
    rbac = Strategy(name_fn=name_is_path_segment)
    return {
        ("", "pods"): Strategy(pod_default, pod_prepare_create, None, pod_validate,
                               pod_validate_update),
        ("", "namespaces"): Strategy(None, namespace_prepare_create, namespace_prepare_update,
                                     name_fn=name_is_dns_label),
        ("", "nodes"): Strategy(keep_status_on_create=True),
        ("", "services"): Strategy(lambda o: service_default(o, ips),
                                   name_fn=name_is_dns1035_label),
        ("", "secrets"): Strategy(secret_default, validate=secret_validate),
        ("", "events"): Strategy(create_on_update=True),
        ("", "endpoints"): Strategy(create_on_update=True),
        ("coordination.k8s.io", "leases"): Strategy(create_on_update=True),
        ("apps", "deployments"): Strategy(deployment_default, validate=workload_validate),
        ("apps", "replicasets"): Strategy(lambda o: _workload_default(o),
                                          validate=workload_validate),
        ("apps", "statefulsets"): Strategy(lambda o: _workload_default(o),
                                           validate=workload_validate),
        ("apps", "daemonsets"): Strategy(daemonset_default, validate=workload_validate),
        ("scheduling.k8s.io", "priorityclasses"): Strategy(
            priorityclass_default, validate=priorityclass_validate,
            validate_update=priorityclass_validate_update),
        ("rbac.authorization.k8s.io", "clusterroles"): rbac,
        ("rbac.authorization.k8s.io", "clusterrolebindings"): rbac,
        ("rbac.authorization.k8s.io", "roles"): rbac,
        ("rbac.authorization.k8s.io", "rolebindings"): rbac,
    }


DEFAULT_STRATEGY = Strategy()
