"""The non-CRUD subresources: pods/binding, pods/eviction and scale.

Corresponds to upstream ``pkg/registry/core/pod/storage`` (``BindingREST``: set
``spec.nodeName`` once, add ``PodScheduled=True``; ``EvictionREST``: honour
PodDisruptionBudgets, 429 when an eviction would violate one) and the ``ScaleREST`` of
workloads (``autoscaling/v1`` Scale).
"""

from __future__ import annotations

import math
from typing import Any

from . import errors
from .api import Api
from .meta import json_kind, now_rfc3339
from .resources import ResourceInfo
from .selectors import selector_from_object
from .watch import Stored

Obj = dict[str, Any]


def _success(details: Obj | None = None, code: int = 201) -> Obj:
    out: Obj = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": code}
    if details:
        out["details"] = details
    return out


def _object_field(body: Obj, field: str, kind: str) -> Obj:
    """A field of a subresource's body that Go decodes into a struct: 400 if not an object."""
    v = body.get(field) or {}
    if not isinstance(v, dict):
        raise errors.bad_request(
            f"{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal "
            f"{json_kind(v)} into Go struct field {kind}.{field} of type object")
    return v


async def bind(api: Api, ns: str, name: str, binding: Any, dry_run: bool = False) -> Obj:
    """POST pods/<name>/binding (or /bindings): assign the pod to a node exactly once."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body must be a Binding")
    info = api.info("", "v1", "pods")
    bmd = _object_field(binding, "metadata", "Binding")
    ann = bmd.get("annotations") or {}
    # Upstream decodes the Binding into its typed struct: annotations must be strings there,
    # and they are copied onto the pod as they are.
    if not isinstance(ann, dict) or any(not isinstance(v, str) for v in ann.values()):
        raise errors.bad_request(
            'Binding in version "v1" cannot be handled as a Binding: json: cannot unmarshal '
            "a non-string into Go struct field ObjectMeta.metadata.annotations of type string")
    if bmd.get("name") and bmd["name"] != name:
        raise errors.bad_request("the name of the binding does not match the pod")
    target = _object_field(binding, "target", "Binding")
    node = target.get("name")
    if not node:
        raise errors.invalid("", "Binding", name, [
            ("FieldValueRequired", "target.name", "Required value")])
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid("", "Binding", name, [
            ("FieldValueNotSupported", "target.kind",
             f'Unsupported value: "{target.get("kind")}": supported values: "Node"')])
    coll = api.collection(info)
    old = coll.get(ns, name)
    if old is None:
        raise errors.not_found("", "pods", name)
    pod = old.obj
    if (pre := (binding.get("metadata") or {}).get("uid")) and pre != pod["metadata"]["uid"]:
        raise errors.conflict("", "pods", name, "Precondition failed: UID in precondition: "
                              f"{pre}, UID in object meta: {pod['metadata']['uid']}")
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict("", "pods", name,
                              f"pod {name} is being deleted, cannot be assigned to a host")
    current = (pod.get("spec") or {}).get("nodeName")
    if current:
        raise errors.conflict("", "pods", name,
                              f"pod {name} is already assigned to node \"{current}\"")
    new = old.copy()
    new["spec"]["nodeName"] = node
    for k, v in ann.items():
        new["metadata"].setdefault("annotations", {})[k] = v
    conds = new.setdefault("status", {}).setdefault("conditions", [])
    conds[:] = [c for c in conds if c.get("type") != "PodScheduled"]
    conds.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                  "lastTransitionTime": now_rfc3339()})
    if not dry_run:
        st = api.storage.update(coll, new, old)
        api._finish_write(info, "MODIFIED", st)
    return _success()


# -- eviction ---------------------------------------------------------------------------------

def scaled_value(v: Any, total: int, round_up: bool) -> int:
    if isinstance(v, str) and v.endswith("%"):
        pct = int(v[:-1])
        x = pct * total / 100
        return math.ceil(x) if round_up else math.floor(x)
    return int(v)


def pod_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def pdb_status(api: Api, pdb: Obj) -> Obj:
    """Compute a PDB's status from the pods it selects (the disruption controller's job).

    As upstream, an integer ``minAvailable`` counts the selected pods, while ``maxUnavailable``
    and percentages use the scale of the pods' controllers (``spec.replicas`` of the owner named
    by each pod's controller ownerReference; a pod without one counts as one). Healthy pods are
    Ready and not being deleted.
    """
    ns = pdb["metadata"]["namespace"]
    sel = selector_from_object((pdb.get("spec") or {}).get("selector"))
    pods_info = api.info("", "v1", "pods")
    pods = [st.obj for st in api.collection(pods_info).sorted_items(ns)
            if sel.matches(st.obj["metadata"].get("labels"))
            and (st.obj.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    healthy = sum(1 for p in pods if pod_ready(p) and not p["metadata"].get(
        "deletionTimestamp"))
    spec = pdb.get("spec") or {}
    min_avail = spec.get("minAvailable")
    if spec.get("maxUnavailable") is None and isinstance(min_avail, int):
        expected = len(pods)
    else:
        expected = _expected_scale(api, ns, pods)
    if spec.get("maxUnavailable") is not None:
        desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected, True))
    elif spec.get("minAvailable") is not None:
        desired = scaled_value(spec["minAvailable"], expected, True)
    else:
        desired = expected
    allowed = max(0, healthy - desired)
    old = pdb.get("status") or {}
    return {
        "observedGeneration": pdb["metadata"].get("generation", 1),
        "disruptedPods": old.get("disruptedPods") or {},
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [{
            "type": "DisruptionAllowed",
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "lastTransitionTime": _transition(old, allowed > 0),
        }],
    }


def _expected_scale(api: Api, ns: str, pods: list[Obj]) -> int:
    owners: dict[tuple[str, str, str], int] = {}
    total = 0
    for p in pods:
        ref = next((r for r in p["metadata"].get("ownerReferences") or []
                    if r.get("controller")), None)
        if ref is None:
            total += 1
            continue
        key = (ref.get("apiVersion", ""), ref.get("kind", ""), ref.get("name", ""))
        owners[key] = owners.get(key, 0) + 1
    for (api_version, kind, name), count in owners.items():
        group, _, version = api_version.rpartition("/")
        info = api.registry.for_kind(group, version, kind)
        st = api.collection(info).get(ns if info.namespaced else None, name) \
            if info is not None else None
        replicas = ((st.obj.get("spec") or {}).get("replicas") if st is not None else None)
        total += replicas if isinstance(replicas, int) else count
    return total


def _transition(old_status: Obj, allowed: bool) -> str:
    for c in old_status.get("conditions") or []:
        if c.get("type") == "DisruptionAllowed" and (c.get("status") == "True") == allowed:
            return c.get("lastTransitionTime") or now_rfc3339()
    return now_rfc3339()


def refresh_pdbs(api: Api, namespace: str) -> None:
    """Bring the status of every PDB in ``namespace`` up to date."""
    info = api.info("policy", "v1", "poddisruptionbudgets")
    coll = api.collection(info)
    for st in coll.sorted_items(namespace):
        status = pdb_status(api, st.obj)
        cur = st.obj.get("status") or {}
        if {k: v for k, v in cur.items() if k != "conditions"} == \
                {k: v for k, v in status.items() if k != "conditions"} and \
                [c.get("status") for c in cur.get("conditions") or []] == \
                [c["status"] for c in status["conditions"]]:
            continue
        new = st.copy()
        new["status"] = status
        s2 = api.storage.update(coll, new, st)
        api._finish_write(info, "MODIFIED", s2)


async def evict(api: Api, ns: str, name: str, eviction: Any, dry_run: bool = False) -> Obj:
    """POST pods/<name>/eviction (policy/v1 Eviction)."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body must be an Eviction")
    emd = _object_field(eviction, "metadata", "Eviction")
    if emd.get("name") and emd["name"] != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    pods = api.info("", "v1", "pods")
    pod_st: Stored = api.get_stored(pods, ns, name)
    pod = pod_st.obj
    options = _object_field(eviction, "deleteOptions", "Eviction")
    phase = (pod.get("status") or {}).get("phase")
    if pod["metadata"].get("deletionTimestamp") or phase in ("Succeeded", "Failed", "Pending"):
        await api.delete(pods, ns, name, options, dry_run=dry_run)
        return _success(code=201)
    pdb_info = api.info("policy", "v1", "poddisruptionbudgets")
    pdb_coll = api.collection(pdb_info)
    labels = pod["metadata"].get("labels") or {}
    matching = [st for st in pdb_coll.sorted_items(ns)
                if labels and selector_from_object(
                    (st.obj.get("spec") or {}).get("selector")).matches(labels)]
    if len(matching) > 1:
        raise errors.ApiError(500, "InternalError",
                              "This pod has more than one PodDisruptionBudget, which the "
                              "eviction subresource does not support.")
    if matching:
        pdb_st = matching[0]
        pdb = pdb_st.obj
        status = pdb_status(api, pdb)
        ready = pod_ready(pod)
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
        can_ignore = not ready and (
            policy == "AlwaysAllow" or status["currentHealthy"] >= status["desiredHealthy"])
        if not can_ignore:
            if status["disruptionsAllowed"] <= 0:
                pname = pdb["metadata"]["name"]
                raise errors.too_many_requests(
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    {"causes": [{
                        "reason": "DisruptionBudget",
                        "message": f"The disruption budget {pname} needs "
                                   f"{status['desiredHealthy']} healthy pods and has "
                                   f"{status['currentHealthy']} currently"}]})
            if not dry_run:
                status["disruptionsAllowed"] -= 1
                status["disruptedPods"] = dict(status["disruptedPods"],
                                               **{name: now_rfc3339()})
                new = pdb_st.copy()
                new["status"] = status
                s2 = api.storage.update(pdb_coll, new, pdb_st)
                api._finish_write(pdb_info, "MODIFIED", s2)
    await api.delete(pods, ns, name, options, dry_run=dry_run)
    return _success(code=201)


# -- scale ------------------------------------------------------------------------------------

def scale_of(info: ResourceInfo, obj: Obj) -> Obj:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    md = obj["metadata"]
    spec_path, status_path, selector_path = _scale_paths(info)
    out: Obj = {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                         "creationTimestamp") if k in md},
        "spec": {"replicas": _dig(obj, spec_path) or 0},
        "status": {"replicas": _dig(obj, status_path) or 0},
    }
    sel = _dig(obj, selector_path) if selector_path else spec.get("selector")
    if isinstance(sel, dict):
        from .tables import _selector

        out["status"]["selector"] = _selector(sel).replace("<none>", "")
    elif isinstance(sel, str):
        out["status"]["selector"] = sel
    del status
    return out


def _scale_paths(info: ResourceInfo) -> tuple[list[str], list[str], list[str] | None]:
    if info.crd is not None:
        for v in (info.crd.get("spec") or {}).get("versions") or []:
            if v.get("name") == info.version:
                sc = ((v.get("subresources") or {}).get("scale") or {})
                sel = sc.get("labelSelectorPath")
                return (sc.get("specReplicasPath", ".spec.replicas").lstrip(".").split("."),
                        sc.get("statusReplicasPath", ".status.replicas").lstrip(".").split("."),
                        sel.lstrip(".").split(".") if sel else None)
    return ["spec", "replicas"], ["status", "replicas"], ["spec", "selector"]


def _dig(obj: Any, path: list[str]) -> Any:
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


async def update_scale(api: Api, info: ResourceInfo, ns: str | None, name: str,
                       scale: Any, dry_run: bool = False) -> Obj:
    if not isinstance(scale, dict) or not isinstance((scale.get("spec") or {}).get(
            "replicas"), int):
        raise errors.invalid("autoscaling", "Scale", name, [
            ("FieldValueRequired", "spec.replicas", "Required value")])
    st = api.get_stored(info, ns, name)
    want = (scale.get("metadata") or {}).get("resourceVersion")
    if want and want != st.obj["metadata"]["resourceVersion"]:
        raise errors.stale_update(info.group, info.plural, name)
    obj = orjson_copy(api.view(info, st))
    spec_path = _scale_paths(info)[0]
    cur = obj
    for p in spec_path[:-1]:
        cur = cur.setdefault(p, {})
    cur[spec_path[-1]] = scale["spec"]["replicas"]
    new = await api._update(info, api.collection(info), api._to_storage(info, obj), st, None,
                            dry_run)
    return scale_of(info, api.view(info, new))


def orjson_copy(obj: Obj) -> Obj:
    import orjson

    return orjson.loads(orjson.dumps(obj))
