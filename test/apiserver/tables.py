"""``Table`` output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``) for kubectl get.

Corresponds to upstream ``pkg/printers/internalversion/printers.go`` (columns of the built-in
types: pods, nodes, namespaces, ...) and ``apiextensions-apiserver/pkg/registry/
customresource/tableconvertor`` (CRD ``additionalPrinterColumns``, default ``Age``).
Other resources get the generic Name/Age columns, like kube-apiserver's default convertor.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from api.meta import parse_timestamp

from . import jsonpath
from .resources import ResourceInfo

Obj = dict[str, Any]
Column = tuple[str, str, str, int, Callable[[Obj, float], Any]]  # name, type, format, prio, fn

NONE = "<none>"


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        sec = s % 60
        return f"{minutes}m" if sec == 0 else f"{minutes}m{sec}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(ts: str | None, now: float) -> str:
    t = parse_timestamp(ts)
    return "<unknown>" if t is None else human_duration(now - t)


def _md(o: Obj) -> Obj:
    return o.get("metadata") or {}


def _name(o: Obj, _: float) -> str:
    return _md(o).get("name", "")


def _age(o: Obj, now: float) -> str:
    return since(_md(o).get("creationTimestamp"), now)


NAME: Column = ("Name", "string", "name", 0, _name)
AGE: Column = ("Age", "string", "", 0, _age)


# -- pods -------------------------------------------------------------------------------------

def _pod_status(o: Obj) -> tuple[str, int, int, int]:
    spec = o.get("spec") or {}
    st = o.get("status") or {}
    total = len(spec.get("containers") or [])
    restarts = 0
    ready = 0
    reason = st.get("reason") or st.get("phase") or ""
    initializing = False
    init_specs = spec.get("initContainers") or []
    for i, cs in enumerate(st.get("initContainerStatuses") or []):
        restarts += cs.get("restartCount", 0)
        state = cs.get("state") or {}
        term = state.get("terminated")
        if term and term.get("exitCode", 0) == 0:
            continue
        if term:
            reason = "Init:" + (term.get("reason") or f"ExitCode:{term.get('exitCode')}")
        elif (state.get("waiting") or {}).get("reason") not in (None, "PodInitializing"):
            reason = "Init:" + state["waiting"]["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing:
        has_running = False
        for cs in reversed(st.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term and term.get("reason"):
                reason = term["reason"]
            elif term:
                reason = f"Signal:{term['signal']}" if term.get("signal") else \
                    f"ExitCode:{term.get('exitCode', 0)}"
            elif cs.get("ready") and "running" in state:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ok = any(c.get("type") == "Ready" and c.get("status") == "True"
                     for c in st.get("conditions") or [])
            reason = "Running" if ok else "NotReady"
    if _md(o).get("deletionTimestamp"):
        reason = "Unknown" if st.get("reason") == "NodeLost" else "Terminating"
    return reason, ready, total, restarts


def _readiness_gates(o: Obj) -> str:
    gates = (o.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return NONE
    conds = {c.get("type"): c.get("status") for c in (o.get("status") or {}).get(
        "conditions") or []}
    ok = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
    return f"{ok}/{len(gates)}"


POD_COLUMNS: list[Column] = [
    NAME,
    ("Ready", "string", "", 0, lambda o, n: "{}/{}".format(*_pod_status(o)[1:3])),
    ("Status", "string", "", 0, lambda o, n: _pod_status(o)[0]),
    ("Restarts", "string", "", 0, lambda o, n: str(_pod_status(o)[3])),
    AGE,
    ("IP", "string", "", 1, lambda o, n: (o.get("status") or {}).get("podIP") or NONE),
    ("Node", "string", "", 1, lambda o, n: (o.get("spec") or {}).get("nodeName") or NONE),
    ("Nominated Node", "string", "", 1,
     lambda o, n: (o.get("status") or {}).get("nominatedNodeName") or NONE),
    ("Readiness Gates", "string", "", 1, lambda o, n: _readiness_gates(o)),
]


# -- nodes ------------------------------------------------------------------------------------

def _node_status(o: Obj) -> str:
    conds = (o.get("status") or {}).get("conditions") or []
    ready = next((c for c in conds if c.get("type") == "Ready"), None)
    if ready is None:
        out = ["Unknown"]
    elif ready.get("status") == "True":
        out = ["Ready"]
    else:
        out = ["NotReady"]
    if (o.get("spec") or {}).get("unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def _node_roles(o: Obj) -> str:
    roles = set()
    for k, v in (_md(o).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            roles.add(k[len("node-role.kubernetes.io/"):])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(roles)) if roles else NONE


def _node_addr(o: Obj, typ: str) -> str:
    for a in (o.get("status") or {}).get("addresses") or []:
        if a.get("type") == typ:
            return a.get("address", NONE)
    return NONE


def _node_info(o: Obj, key: str) -> str:
    return ((o.get("status") or {}).get("nodeInfo") or {}).get(key) or "<unknown>"


NODE_COLUMNS: list[Column] = [
    NAME,
    ("Status", "string", "", 0, lambda o, n: _node_status(o)),
    ("Roles", "string", "", 0, lambda o, n: _node_roles(o)),
    AGE,
    ("Version", "string", "", 0, lambda o, n: _node_info(o, "kubeletVersion")),
    ("Internal-IP", "string", "", 1, lambda o, n: _node_addr(o, "InternalIP")),
    ("External-IP", "string", "", 1, lambda o, n: _node_addr(o, "ExternalIP")),
    ("OS-Image", "string", "", 1, lambda o, n: _node_info(o, "osImage")),
    ("Kernel-Version", "string", "", 1, lambda o, n: _node_info(o, "kernelVersion")),
    ("Container-Runtime", "string", "", 1,
     lambda o, n: _node_info(o, "containerRuntimeVersion")),
]


# -- other built-ins --------------------------------------------------------------------------

def _get(o: Obj, *path: str, default: Any = None) -> Any:
    cur: Any = o
    for p in path:
        if not isinstance(cur, dict):
            return default
        cur = cur.get(p)
    return default if cur is None else cur


def _selector(sel: Any) -> str:
    if not sel:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())] \
        if "matchLabels" in sel or "matchExpressions" in sel else \
        [f"{k}={v}" for k, v in sorted(sel.items())]
    for e in sel.get("matchExpressions") or [] if isinstance(sel, dict) else []:
        op = e.get("operator")
        vals = ",".join(e.get("values") or [])
        if op == "In":
            parts.append(f"{e['key']} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{e['key']} notin ({vals})")
        elif op == "Exists":
            parts.append(e["key"])
        elif op == "DoesNotExist":
            parts.append(f"!{e['key']}")
    return ",".join(parts) or NONE


def _ports(o: Obj) -> str:
    out = []
    for p in _get(o, "spec", "ports", default=[]):
        s = f"{p.get('port')}"
        if p.get("nodePort"):
            s += f":{p['nodePort']}"
        out.append(f"{s}/{p.get('protocol', 'TCP')}")
    return ",".join(out) or NONE


def _containers(o: Obj, key: str) -> str:
    cs = _get(o, "spec", "template", "spec", "containers", default=[])
    return ",".join(c.get(key, "") for c in cs) or NONE


def _event_object(o: Obj) -> str:
    io = o.get("involvedObject") or {}
    return f"{(io.get('kind') or '').lower()}/{io.get('name', '')}"


def _event_last_seen(o: Obj, now: float) -> str:
    ts = o.get("lastTimestamp") or o.get("eventTime") or _md(o).get("creationTimestamp")
    return since(ts, now)


def _intstr(v: Any) -> str:
    return NONE if v is None else str(v)


BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "pods"): POD_COLUMNS,
    ("", "nodes"): NODE_COLUMNS,
    ("", "namespaces"): [NAME, ("Status", "string", "", 0,
                                lambda o, n: _get(o, "status", "phase", default="")), AGE],
    ("", "configmaps"): [NAME, ("Data", "integer", "", 0,
                                lambda o, n: len(o.get("data") or {}) +
                                len(o.get("binaryData") or {})), AGE],
    ("", "secrets"): [NAME, ("Type", "string", "", 0, lambda o, n: o.get("type", "")),
                      ("Data", "integer", "", 0, lambda o, n: len(o.get("data") or {})), AGE],
    ("", "services"): [
        NAME, ("Type", "string", "", 0, lambda o, n: _get(o, "spec", "type", default="")),
        ("Cluster-IP", "string", "", 0, lambda o, n: _get(o, "spec", "clusterIP", default=NONE)),
        ("External-IP", "string", "", 0, lambda o, n: ",".join(
            _get(o, "spec", "externalIPs", default=[])) or NONE),
        ("Port(s)", "string", "", 0, lambda o, n: _ports(o)), AGE,
        ("Selector", "string", "", 1, lambda o, n: _selector(_get(o, "spec", "selector")))],
    ("", "events"): [
        ("Last Seen", "string", "", 0, _event_last_seen),
        ("Type", "string", "", 0, lambda o, n: o.get("type", "")),
        ("Reason", "string", "", 0, lambda o, n: o.get("reason", "")),
        ("Object", "string", "", 0, lambda o, n: _event_object(o)),
        ("Message", "string", "", 0, lambda o, n: (o.get("message") or "").strip())],
    ("apps", "deployments"): [
        NAME, ("Ready", "string", "", 0, lambda o, n: "{}/{}".format(
            _get(o, "status", "readyReplicas", default=0),
            _get(o, "spec", "replicas", default=0))),
        ("Up-to-date", "integer", "", 0,
         lambda o, n: _get(o, "status", "updatedReplicas", default=0)),
        ("Available", "integer", "", 0,
         lambda o, n: _get(o, "status", "availableReplicas", default=0)), AGE,
        ("Containers", "string", "", 1, lambda o, n: _containers(o, "name")),
        ("Images", "string", "", 1, lambda o, n: _containers(o, "image")),
        ("Selector", "string", "", 1, lambda o, n: _selector(_get(o, "spec", "selector")))],
    ("apps", "replicasets"): [
        NAME, ("Desired", "integer", "", 0, lambda o, n: _get(o, "spec", "replicas", default=0)),
        ("Current", "integer", "", 0, lambda o, n: _get(o, "status", "replicas", default=0)),
        ("Ready", "integer", "", 0, lambda o, n: _get(o, "status", "readyReplicas", default=0)),
        AGE,
        ("Containers", "string", "", 1, lambda o, n: _containers(o, "name")),
        ("Images", "string", "", 1, lambda o, n: _containers(o, "image")),
        ("Selector", "string", "", 1, lambda o, n: _selector(_get(o, "spec", "selector")))],
    ("apps", "daemonsets"): [
        NAME,
        ("Desired", "integer", "", 0,
         lambda o, n: _get(o, "status", "desiredNumberScheduled", default=0)),
        ("Current", "integer", "", 0,
         lambda o, n: _get(o, "status", "currentNumberScheduled", default=0)),
        ("Ready", "integer", "", 0, lambda o, n: _get(o, "status", "numberReady", default=0)),
        ("Up-to-date", "integer", "", 0,
         lambda o, n: _get(o, "status", "updatedNumberScheduled", default=0)),
        ("Available", "integer", "", 0,
         lambda o, n: _get(o, "status", "numberAvailable", default=0)),
        ("Node Selector", "string", "", 0, lambda o, n: ",".join(
            f"{k}={v}" for k, v in sorted(_get(o, "spec", "template", "spec", "nodeSelector",
                                               default={}).items())) or NONE), AGE],
    ("coordination.k8s.io", "leases"): [
        NAME, ("Holder", "string", "", 0,
               lambda o, n: _get(o, "spec", "holderIdentity", default="")), AGE],
    ("scheduling.k8s.io", "priorityclasses"): [
        NAME, ("Value", "integer", "", 0, lambda o, n: o.get("value", 0)),
        ("Global-Default", "boolean", "", 0, lambda o, n: bool(o.get("globalDefault"))), AGE,
        ("PreemptionPolicy", "string", "", 0, lambda o, n: o.get("preemptionPolicy", ""))],
    ("policy", "poddisruptionbudgets"): [
        NAME, ("Min Available", "string", "", 0,
               lambda o, n: _intstr(_get(o, "spec", "minAvailable"))),
        ("Max Unavailable", "string", "", 0,
         lambda o, n: _intstr(_get(o, "spec", "maxUnavailable"))),
        ("Allowed Disruptions", "integer", "", 0,
         lambda o, n: _get(o, "status", "disruptionsAllowed", default=0)), AGE],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        NAME, ("Created At", "date", "", 0,
               lambda o, n: _md(o).get("creationTimestamp"))],
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): [
        NAME, ("Webhooks", "integer", "", 0, lambda o, n: len(o.get("webhooks") or [])), AGE],
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): [
        NAME, ("Webhooks", "integer", "", 0, lambda o, n: len(o.get("webhooks") or [])), AGE],
}


# -- custom resources -------------------------------------------------------------------------

def _crd_columns(info: ResourceInfo) -> list[Column]:
    crd = info.crd or {}
    cols: list[dict[str, Any]] = []
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == info.version:
            cols = v.get("additionalPrinterColumns") or []
    if not cols:
        cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    out: list[Column] = [NAME]
    for c in cols:
        out.append((c.get("name", ""), c.get("type", "string"), c.get("format", ""),
                    int(c.get("priority", 0)), _crd_cell(c.get("jsonPath", ""),
                                                         c.get("type", "string"))))
    return out


def _crd_cell(path: str, typ: str) -> Callable[[Obj, float], Any]:
    def cell(o: Obj, now: float) -> Any:
        try:
            vals = jsonpath.find(o, path)
        except ValueError:
            return None
        if not vals:
            return None
        v = vals[0] if len(vals) == 1 else vals
        if typ == "date" and isinstance(v, str):
            return since(v, now)
        if typ == "integer" and isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
        if typ == "boolean" and isinstance(v, bool):
            return v
        if isinstance(v, (dict, list)):
            import orjson

            return orjson.dumps(v).decode()
        return v if typ in ("integer", "number", "boolean") and not isinstance(v, str) \
            else str(v) if not isinstance(v, bool) else ("true" if v else "false")

    return cell


def columns_for(info: ResourceInfo) -> list[Column]:
    if info.crd is not None:
        return _crd_columns(info)
    return BUILTIN_COLUMNS.get(info.storage, [NAME, AGE])


def _column_defs(cols: list[Column]) -> list[Obj]:
    return [{"name": n, "type": "string" if t == "date" else t, "format": f,
             "description": "", "priority": p} for n, t, f, p, _ in cols]


def partial_metadata(obj: Obj) -> Obj:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


def table(info: ResourceInfo, objs: list[Obj], include_object: str = "PartialObjectMetadata",
          list_meta: Obj | None = None, with_columns: bool = True) -> Obj:
    cols = columns_for(info)
    now = time.time()
    rows = []
    for o in objs:
        row: Obj = {"cells": [fn(o, now) for *_, fn in cols]}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = partial_metadata(o)
        rows.append(row)
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
                "metadata": list_meta or {}}
    out["columnDefinitions"] = _column_defs(cols) if with_columns else None
    out["rows"] = rows
    return out
