"""The ReplicaSet and Deployment controllers, inside the server.

Corresponds to kube-controller-manager's ``pkg/controller/replicaset`` (``manageReplicas``,
``calculateStatus``, adoption through ``ClaimPods``) and ``pkg/controller/deployment``
(``getNewReplicaSet`` with the ``pod-template-hash`` label, ``rolling.go``, ``recreate.go``,
``cleanupDeployment``, ``syncRolloutStatus``), driven by the writes the server stores rather
than by informers, so no expectations are needed: a sync sees every write before it.

* A ReplicaSet keeps ``spec.replicas`` active pods (not terminating, not finished) that match
  its selector and name it as their controller: it creates pods from its template named
  ``<replicaset>-<5 random characters>`` (generateName, through admission as any client's
  pod), adopts matching orphans, releases owned pods that stop matching, and deletes the
  surplus in upstream's ``ActivePods`` order (unscheduled, then Pending before Running, not
  ready, ready for less time, more restarts, newer; upstream's ranking by pods on the same
  node is left out). A pod being deleted no longer counts, so an evicted pod's replacement is
  created at once. Status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas
  (ready for ``minReadySeconds``), observedGeneration and a ``ReplicaFailure`` condition while
  pods cannot be created.
* A Deployment owns one ReplicaSet per template, ``<deployment>-<pod-template-hash>`` (the hash
  is FNV-32a of the template's JSON and ``status.collisionCount``, spelled as upstream's
  ``SafeEncodeString``; not upstream's exact value, which hashes Go's printed struct), with the
  ``pod-template-hash`` label on it, its selector and template, and the
  ``deployment.kubernetes.io/revision``, ``desired-replicas`` and ``max-replicas``
  annotations. RollingUpdate follows ``maxSurge``/``maxUnavailable`` (defaults 25%) as
  upstream's reconcileNewReplicaSet/reconcileOldReplicaSets; Recreate scales the old sets to
  zero and starts the new one once their pods are gone. Old sets beyond
  ``revisionHistoryLimit`` are deleted. Status: replicas, updatedReplicas, readyReplicas,
  availableReplicas, unavailableReplicas, observedGeneration, the Available and Progressing
  conditions with upstream's reasons and messages. A paused Deployment starts no rollout
  (``DeploymentPaused``); its replica count still applies when one set runs. Not done:
  ``progressDeadlineSeconds``, proportional scaling of several live sets (during a rollout),
  the ``DeploymentResumed`` reason.

Both record upstream's events (core/v1, not aggregated): ``SuccessfulCreate``,
``SuccessfulDelete`` and ``FailedCreate`` on the ReplicaSet from ``replicaset-controller``,
``ScalingReplicaSet`` on the Deployment from ``deployment-controller``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from api.meta import parse_timestamp

from . import errors
from .api import Api
from .bootstrap import store_new
from .controllers import Debounced
from .gc import OwnerIndex, controller_ref
from .meta import now_rfc3339, safe_encode_string
from .resources import ResourceInfo
from .selectors import LabelSelector, selector_from_object
from .subresources import pod_ready, scaled_value
from .watch import Stored

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]  # namespace, name
POD_GR = ("", "pods")
RS_GR = ("apps", "replicasets")
DEPLOY_GR = ("apps", "deployments")
POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def is_active(pod: Obj) -> bool:
    """Counts towards replicas: not being deleted, not finished (``FilterActivePods``)."""
    return not pod["metadata"].get("deletionTimestamp") and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _ready_since(pod: Obj) -> float:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            return parse_timestamp(c.get("lastTransitionTime")) or 0.0
    return 0.0


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    return pod_ready(pod) and (min_ready_seconds <= 0 or
                               _ready_since(pod) + min_ready_seconds <= now)


def deletion_order(pod: Obj) -> tuple[int, int, int, float, int, float]:
    """Sort key: the pods to delete first come first (upstream's ``ActivePods``, less the
    co-located ranking)."""
    status = pod.get("status") or {}
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ())
    ready = pod_ready(pod)
    return (1 if (pod.get("spec") or {}).get("nodeName") else 0,
            _PHASE_RANK.get(status.get("phase") or "Pending", 0),
            1 if ready else 0,
            -_ready_since(pod) if ready else 0.0,
            -restarts,
            -(parse_timestamp(pod["metadata"].get("creationTimestamp")) or 0.0))


def _copy(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def pod_template_hash(template: Obj, collision_count: int | None = None) -> str:
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += collision_count.to_bytes(4, "little")
    return safe_encode_string(str(_fnv32a(data)))


def _without_hash(template: Obj) -> Obj:
    md = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (md.pop("labels", None) or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        md["labels"] = labels
    return {**template, "metadata": md}


def same_template(a: Obj, b: Obj) -> bool:
    """Equal but for the pod-template-hash label (upstream's ``EqualIgnoreHash``)."""
    return _without_hash(a) == _without_hash(b)


def _owner_ref(obj: Obj) -> Obj:
    md = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": md["name"],
            "uid": md["uid"], "controller": True, "blockOwnerDeletion": True}


def _is_controlled_by(obj: Obj, kind: str, uid: str | None = None) -> Obj | None:
    ref = controller_ref(obj)
    if ref is None or ref.get("kind") != kind or \
            not str(ref.get("apiVersion") or "").startswith("apps/"):
        return None
    return ref if uid is None or ref.get("uid") == uid else None


def _selector(obj: Obj) -> LabelSelector | None:
    """The object's ``spec.selector``; None when it is missing or malformed (never acted on)."""
    sel = (obj.get("spec") or {}).get("selector")
    if not isinstance(sel, dict):
        return None
    try:
        return selector_from_object(sel)
    except errors.ApiError:
        return None


def _replicas(obj: Obj) -> int:
    r = (obj.get("spec") or {}).get("replicas")
    return r if isinstance(r, int) else 1


def _status(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _key(obj: Obj) -> Key:
    md = obj["metadata"]
    return md["namespace"], md["name"]


class _Controller:
    """What both controllers share: the API, the owner index, adoption of orphans, events."""

    component = ""  # the events' source

    def __init__(self, api: Api, index: OwnerIndex, interval: float) -> None:
        self.api = api
        self.index = index
        self.events = api.info("", "v1", "events")
        self.queue: Debounced[Key] = Debounced(self._sync, interval)
        # Per owner, orphans that may match it ("*": look through the whole namespace).
        self.orphans: dict[Key, set[str]] = {}

    async def _sync(self, key: Key) -> None:
        raise NotImplementedError

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record an event about ``obj``, as the controller's event recorder would."""
        md = obj["metadata"]
        now = now_rfc3339()
        store_new(self.api, self.events, {
            "metadata": {"name": f"{md['name']}.{time.time_ns():x}",
                         "namespace": md["namespace"]},
            "involvedObject": {"kind": obj["kind"], "namespace": md["namespace"],
                               "name": md["name"], "uid": md["uid"],
                               "apiVersion": obj["apiVersion"],
                               "resourceVersion": md.get("resourceVersion", "")},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component}, "reportingComponent": self.component,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1})

    def _orphan_written(self, owner_info: ResourceInfo, obj: Obj) -> None:
        """An object without a controller was written: the owners in its namespace whose
        selector matches it will try to adopt it."""
        md = obj["metadata"]
        ns = md.get("namespace") or ""
        owners = self.api.collection(owner_info)
        if not owners.namespace_count(ns) or not md.get("labels"):
            return
        for st in owners.sorted_items(ns):
            sel = _selector(st.obj)
            if sel is not None and not sel.empty and sel.matches(md["labels"]):
                key = _key(st.obj)
                self.orphans.setdefault(key, set()).add(md["name"])
                self.queue.mark(key)

    def _owned(self, info: ResourceInfo, owner: Obj, kind: str) -> list[Stored]:
        """The objects of ``info`` whose controller is ``owner``, current."""
        ns = owner["metadata"]["namespace"]
        uid = owner["metadata"]["uid"]
        coll = self.api.collection(info)
        out = []
        for ref in self.index.of(uid, info.storage):
            st = coll.get(ns, ref.name)
            if st is not None and st.obj["metadata"]["uid"] == ref.uid and \
                    _is_controlled_by(st.obj, kind, uid) is not None:
                out.append(st)
        return out

    async def _claim(self, info: ResourceInfo, owner: Obj, sel: LabelSelector,
                     owned: list[Stored]) -> None:
        """Adopt matching orphans and release owned objects that stopped matching
        (``ClaimPods``/``ClaimReplicaSets``), by patching their ownerReferences."""
        key = _key(owner)
        wanted = self.orphans.pop(key, set())
        coll = self.api.collection(info)
        if "*" in wanted:
            candidates = coll.sorted_items(key[0])
        else:
            candidates = [st for n in sorted(wanted) if (st := coll.get(key[0], n)) is not None]
        me = _owner_ref(owner)
        for st in candidates:
            md = st.obj["metadata"]
            if controller_ref(st.obj) is None and not md.get("deletionTimestamp") and \
                    sel.matches(md.get("labels")):
                refs = list(md.get("ownerReferences") or ()) + [me]
                await self._patch_refs(info, st, refs)
        for st in owned:
            md = st.obj["metadata"]
            if not sel.matches(md.get("labels")):
                refs = [r for r in md.get("ownerReferences") or () if r.get("uid") != me["uid"]]
                await self._patch_refs(info, st, refs)

    async def _patch_refs(self, info: ResourceInfo, st: Stored, refs: list[Obj]) -> None:
        new = st.copy()
        new["metadata"]["ownerReferences"] = refs
        if not refs:
            del new["metadata"]["ownerReferences"]
        await self._write(info, st, new)

    async def _write(self, info: ResourceInfo, old: Stored, new: Obj,
                     subresource: str | None = None) -> Stored | None:
        """Store ``new`` over ``old``; None (and the owner synced again) when that fails."""
        try:
            return await self.api._update(info, self.api.collection(info), new, old,
                                          subresource, False)
        except errors.ApiError as e:
            if e.code not in (404, 409):
                log.warning("%s %s/%s: %s", info.plural, old.obj["metadata"].get("namespace"),
                            old.obj["metadata"]["name"], e)
            return None


class ReplicaSetController(_Controller):
    component = "replicaset-controller"

    def __init__(self, api: Api, index: OwnerIndex, interval: float = 0.05) -> None:
        super().__init__(api, index, interval)
        self.pods = api.info("", "v1", "pods")
        self.rs = api.info("apps", "v1", "replicasets")
        api.after_write.append(self._on_write)
        for st in api.collection(self.rs).sorted_items():
            self.orphans[_key(st.obj)] = {"*"}
            self.queue.mark(_key(st.obj))

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        obj = st.obj
        if info.storage == RS_GR:
            if type_ == "ADDED":
                self.orphans[_key(obj)] = {"*"}
            if type_ != "DELETED":
                self.queue.mark(_key(obj))
        elif info.storage == POD_GR:
            ref = _is_controlled_by(obj, "ReplicaSet")
            if ref is not None:
                self.queue.mark((obj["metadata"]["namespace"], str(ref.get("name"))))
            elif type_ != "DELETED" and controller_ref(obj) is None and is_active(obj):
                self._orphan_written(self.rs, obj)

    async def _sync(self, key: Key) -> None:
        st = self.api.collection(self.rs).get(*key)
        if st is None:
            self.orphans.pop(key, None)
            return
        rs = st.obj
        sel = _selector(rs)
        owned = self._owned(self.pods, rs, "ReplicaSet")
        failure = None
        if sel is not None and not rs["metadata"].get("deletionTimestamp"):
            await self._claim(self.pods, rs, sel, owned)
            owned = self._owned(self.pods, rs, "ReplicaSet")
            failure = await self._manage(rs, [p.obj for p in owned if is_active(p.obj)])
            owned = self._owned(self.pods, rs, "ReplicaSet")
        await self._update_status(st, [p.obj for p in owned], failure)

    async def _manage(self, rs: Obj, active: list[Obj]) -> str | None:
        """Create or delete pods towards ``spec.replicas``; the error creating one, if any."""
        ns, name = _key(rs)
        diff = len(active) - _replicas(rs)
        if diff > 0:
            for pod in sorted(active, key=deletion_order)[:diff]:
                md = pod["metadata"]
                try:
                    await self.api.delete(self.pods, ns, md["name"],
                                          {"preconditions": {"uid": md["uid"]}})
                except errors.ApiError as e:
                    if e.code not in (404, 409):
                        log.warning("replicaset %s/%s: deleting pod %s: %s", ns, name,
                                    md["name"], e)
                    continue
                self._event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {md['name']}")
            return None
        for _ in range(-diff):
            try:
                created = await self.api.create(self.pods, ns, self._pod_from_template(rs))
            except errors.ApiError as e:
                # As upstream's slow start: stop at the first failure, try again later.
                self.queue.mark_after((ns, name), 1.0)
                self._event(rs, "Warning", "FailedCreate", f"Error creating: {e.message}")
                return e.message
            self._event(rs, "Normal", "SuccessfulCreate",
                        f"Created pod: {created.obj['metadata']['name']}")
        return None

    @staticmethod
    def _pod_from_template(rs: Obj) -> Obj:
        tmpl = (rs.get("spec") or {}).get("template") or {}
        tmd = tmpl.get("metadata") or {}
        md: Obj = {"generateName": f"{rs['metadata']['name']}-",
                   "namespace": rs["metadata"]["namespace"],
                   "ownerReferences": [_owner_ref(rs)]}
        for k in ("labels", "annotations", "finalizers"):
            if tmd.get(k):
                md[k] = _copy(tmd[k])
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
                "spec": _copy(tmpl.get("spec") or {})}

    async def _update_status(self, st: Stored, pods: list[Obj], failure: str | None) -> None:
        rs = st.obj
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        tmpl_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        now = time.time()
        active = [p for p in pods if is_active(p)]
        ready = [p for p in active if pod_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, now)]
        labeled = [p for p in active if all(
            (p["metadata"].get("labels") or {}).get(k) == v for k, v in tmpl_labels.items())]
        old = rs.get("status") or {}
        status: Obj = {"replicas": len(active)}
        for field, n in (("fullyLabeledReplicas", len(labeled)),
                         ("readyReplicas", len(ready)), ("availableReplicas", len(available))):
            if n:
                status[field] = n
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        conds = [c for c in old.get("conditions") or () if c.get("type") != "ReplicaFailure"]
        if failure is not None:
            prev = next((c for c in old.get("conditions") or ()
                         if c.get("type") == "ReplicaFailure"), None)
            conds.append({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                          "message": failure,
                          "lastTransitionTime": (prev or {}).get("lastTransitionTime")
                          or now_rfc3339(now)})
        if conds:
            status["conditions"] = conds
        if len(available) < len(ready):
            # Ready pods become available after minReadySeconds: look again then.
            wait = min(_ready_since(p) + min_ready - now for p in ready
                       if not is_available(p, min_ready, now))
            self.queue.mark_after(_key(rs), max(wait, 0.0) + 0.01)
        if status == old:
            return
        new = st.copy()
        new["status"] = status
        await self._write(self.rs, st, new, "status")


def _fenceposts(d: Obj) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods (upstream's ``ResolveFenceposts``)."""
    spec = d.get("spec") or {}
    desired = _replicas(d)
    ru = (spec.get("strategy") or {}).get("rollingUpdate") or {}
    surge = scaled_value(ru.get("maxSurge", "25%"), desired, True)
    unavailable = scaled_value(ru.get("maxUnavailable", "25%"), desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _revision(rs: Obj) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def _created(rs: Obj) -> tuple[float, str]:
    return parse_timestamp(rs["metadata"].get("creationTimestamp")) or 0.0, \
        rs["metadata"]["name"]


class DeploymentController(_Controller):
    component = "deployment-controller"

    def __init__(self, api: Api, index: OwnerIndex, interval: float = 0.05) -> None:
        super().__init__(api, index, interval)
        self.rs = api.info("apps", "v1", "replicasets")
        self.deploy = api.info("apps", "v1", "deployments")
        self.pods = api.info("", "v1", "pods")
        api.after_write.append(self._on_write)
        for st in api.collection(self.deploy).sorted_items():
            self.orphans[_key(st.obj)] = {"*"}
            self.queue.mark(_key(st.obj))

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        obj = st.obj
        if info.storage == DEPLOY_GR:
            if type_ == "ADDED":
                self.orphans[_key(obj)] = {"*"}
            if type_ != "DELETED":
                self.queue.mark(_key(obj))
        elif info.storage == RS_GR:
            ref = _is_controlled_by(obj, "Deployment")
            if ref is not None:
                self.queue.mark((obj["metadata"]["namespace"], str(ref.get("name"))))
            elif type_ != "DELETED" and controller_ref(obj) is None:
                self._orphan_written(self.deploy, obj)
        elif info.storage == POD_GR and type_ == "DELETED":
            # Recreate waits for the old pods to be gone.
            ref = _is_controlled_by(obj, "ReplicaSet")
            if ref is None:
                return
            ns = obj["metadata"]["namespace"]
            rs = self.api.collection(self.rs).get(ns, str(ref.get("name")))
            dref = _is_controlled_by(rs.obj, "Deployment") if rs is not None else None
            if dref is not None:
                self.queue.mark((ns, str(dref.get("name"))))

    def _owned_sets(self, d: Obj) -> list[Obj]:
        return sorted((st.obj for st in self._owned(self.rs, d, "Deployment")), key=_created)

    async def _sync(self, key: Key) -> None:
        st = self.api.collection(self.deploy).get(*key)
        if st is None:
            self.orphans.pop(key, None)
            return
        d = st.obj
        sel = _selector(d)
        if sel is None or sel.empty or d["metadata"].get("deletionTimestamp"):
            return
        await self._claim(self.rs, d, sel, self._owned(self.rs, d, "Deployment"))
        template = (d.get("spec") or {}).get("template") or {}
        sets = self._owned_sets(d)
        if (d.get("spec") or {}).get("paused") is True:
            # No rollout while paused: only the replica count follows, when one set runs
            # (upstream's sync and scale; its proportional scaling of several is not done).
            active = [rs for rs in sets if _replicas(rs) > 0] or sets[-1:]
            if len(active) == 1 and _replicas(active[0]) != _replicas(d):
                await self._scale(d, active[0], _replicas(d))
            await self._update_status(key, False)
            return
        new = next((rs for rs in sets if same_template(
            (rs.get("spec") or {}).get("template") or {}, template)), None)
        created = False
        if new is None:
            new = await self._create_new_set(st, sets)
            if new is None:
                return
            created = True
            sets = self._owned_sets(d)
        olds = [rs for rs in sets if rs["metadata"]["uid"] != new["metadata"]["uid"]]
        strategy = ((d.get("spec") or {}).get("strategy") or {}).get("type")
        if strategy == "Recreate":
            await self._recreate(d, new, olds)
        else:
            await self._rolling(d, new, olds)
        await self._cleanup(d)
        await self._update_status(key, created)

    async def _create_new_set(self, st: Stored, sets: list[Obj]) -> Obj | None:
        d = st.obj
        ns, dname = _key(d)
        spec = d.get("spec") or {}
        collisions = (d.get("status") or {}).get("collisionCount")
        h = pod_template_hash(spec.get("template") or {}, collisions)
        template = _copy(spec.get("template") or {})
        template.setdefault("metadata", {}).setdefault("labels", {})[POD_TEMPLATE_HASH] = h
        selector = _copy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[POD_TEMPLATE_HASH] = h
        replicas = 0
        if ((spec.get("strategy") or {}).get("type")) != "Recreate":
            surge = _fenceposts(d)[0]
            total = sum(_replicas(rs) for rs in sets)
            replicas = max(0, min(_replicas(d) + surge - total, _replicas(d)))
        revision = max((_revision(rs) for rs in sets), default=0) + 1
        rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{dname}-{h}", "namespace": ns,
                         "labels": dict(template["metadata"]["labels"]),
                         "annotations": self._annotations(d, revision),
                         "ownerReferences": [_owner_ref(d)]},
            "spec": {"replicas": replicas, "minReadySeconds": spec.get("minReadySeconds", 0),
                     "selector": selector, "template": template}}
        try:
            created = await self.api.create(self.rs, ns, rs)
            if replicas:
                self._event(d, "Normal", "ScalingReplicaSet",
                            f"Scaled up replica set {rs['metadata']['name']} from 0 to "
                            f"{replicas}")
            return created.obj
        except errors.ApiError as e:
            if e.code != 409:
                log.warning("deployment %s/%s: creating replicaset: %s", ns, dname, e)
                self.queue.mark_after((ns, dname), 1.0)
                return None
        existing = self.api.collection(self.rs).get(ns, rs["metadata"]["name"])
        if existing is not None and _is_controlled_by(existing.obj, "Deployment",
                                                      d["metadata"]["uid"]) is not None \
                and same_template(existing.obj["spec"].get("template") or {}, template):
            return existing.obj
        # A set of that name with another template: hash again with a higher collisionCount.
        new = st.copy()
        new.setdefault("status", {})["collisionCount"] = (collisions or 0) + 1
        await self._write(self.deploy, st, new, "status")
        return None

    @staticmethod
    def _annotations(d: Obj, revision: int | None) -> dict[str, str]:
        """What the deployment writes on its sets (the revision only on the new one)."""
        out = {DESIRED_REPLICAS: str(_replicas(d)),
               MAX_REPLICAS: str(_replicas(d) + _fenceposts(d)[0])}
        if revision is not None:
            out[REVISION] = str(revision)
        return out

    async def _scale(self, d: Obj, rs: Obj, replicas: int,
                     revision: int | None = None) -> None:
        cur = self.api.collection(self.rs).get(*_key(rs))
        if cur is None or cur.obj["metadata"]["uid"] != rs["metadata"]["uid"]:
            return
        new = cur.copy()
        before = _replicas(cur.obj)
        new["spec"]["replicas"] = replicas
        new["metadata"].setdefault("annotations", {}).update(self._annotations(d, revision))
        if await self._write(self.rs, cur, new) is not None and before != replicas:
            self._event(d, "Normal", "ScalingReplicaSet",
                        f"Scaled {'up' if replicas > before else 'down'} replica set "
                        f"{rs['metadata']['name']} from {before} to {replicas}")

    async def _rolling(self, d: Obj, new: Obj, olds: list[Obj]) -> None:
        """Upstream's rolloutRolling: scale the new set up within maxSurge, then the old ones
        down within maxUnavailable, unavailable pods first."""
        desired = _replicas(d)
        surge, unavailable = _fenceposts(d)
        revision = max([_revision(rs) for rs in olds] + [_revision(new) - 1]) + 1
        new_r = _replicas(new)
        total = new_r + sum(_replicas(rs) for rs in olds)
        target = new_r
        if new_r > desired:
            target = desired
        elif new_r < desired and total < desired + surge:
            target = new_r + min(desired + surge - total, desired - new_r)
        if target != new_r or revision != _revision(new) or \
                (new["metadata"].get("annotations") or {}).get(DESIRED_REPLICAS) != str(desired):
            await self._scale(d, new, target, revision)
            total += target - new_r
        olds = [rs for rs in olds if _replicas(rs) > 0]
        if not olds:
            return
        min_available = desired - unavailable
        new_unavailable = target - _status(new, "availableReplicas")
        max_scaled_down = total - min_available - new_unavailable
        if max_scaled_down <= 0:
            return
        cleaned = 0
        remaining: list[tuple[Obj, int]] = []
        for rs in olds:
            r, avail = _replicas(rs), _status(rs, "availableReplicas")
            down = min(max_scaled_down - cleaned, r - avail) if r > avail else 0
            if down > 0:
                await self._scale(d, rs, r - down)
                cleaned += down
            remaining.append((rs, r - down))
        available = _status(new, "availableReplicas") + sum(
            _status(rs, "availableReplicas") for rs in olds)
        budget = available - min_available
        for rs, r in remaining:
            if budget <= 0:
                break
            down = min(r, budget)
            if down > 0:
                await self._scale(d, rs, r - down)
                budget -= down

    async def _recreate(self, d: Obj, new: Obj, olds: list[Obj]) -> None:
        """Upstream's rolloutRecreate: old sets to zero; the new one once their pods are
        gone."""
        for rs in olds:
            if _replicas(rs) > 0:
                await self._scale(d, rs, 0)
        for rs in olds:
            if any(is_active(p.obj) for p in self._owned(self.pods, rs, "ReplicaSet")):
                return
        if _replicas(new) != _replicas(d):
            await self._scale(d, new, _replicas(d), _revision(new))

    async def _cleanup(self, d: Obj) -> None:
        """Delete the oldest unused sets beyond ``revisionHistoryLimit``."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if not isinstance(limit, int):
            return
        template = (d.get("spec") or {}).get("template") or {}
        idle = [rs for rs in self._owned_sets(d)
                if _replicas(rs) == 0 and _status(rs, "replicas") == 0
                and not same_template((rs.get("spec") or {}).get("template") or {}, template)
                and not rs["metadata"].get("deletionTimestamp")]
        idle.sort(key=_revision)
        for rs in idle[:max(0, len(idle) - limit)]:
            try:
                await self.api.delete(self.rs, rs["metadata"]["namespace"],
                                      rs["metadata"]["name"],
                                      {"preconditions": {"uid": rs["metadata"]["uid"]}})
            except errors.ApiError as e:
                if e.code not in (404, 409):
                    log.warning("deployment: deleting old replicaset %s: %s",
                                rs["metadata"]["name"], e)

    async def _update_status(self, key: Key, created: bool) -> None:
        st = self.api.collection(self.deploy).get(*key)
        if st is None:
            return
        d = st.obj
        sets = self._owned_sets(d)
        template = (d.get("spec") or {}).get("template") or {}
        new = next((rs for rs in sets if same_template(
            (rs.get("spec") or {}).get("template") or {}, template)), None)
        desired = _replicas(d)
        replicas = sum(_status(rs, "replicas") for rs in sets)
        updated = _status(new, "replicas") if new is not None else 0
        available = sum(_status(rs, "availableReplicas") for rs in sets)
        old = d.get("status") or {}
        status: Obj = {"observedGeneration": d["metadata"].get("generation", 1)}
        for field, n in (("replicas", replicas), ("updatedReplicas", updated),
                         ("readyReplicas", sum(_status(rs, "readyReplicas") for rs in sets)),
                         ("availableReplicas", available),
                         ("unavailableReplicas",
                          max(0, sum(_replicas(rs) for rs in sets) - available))):
            if n:
                status[field] = n
        if "collisionCount" in old:
            status["collisionCount"] = old["collisionCount"]
        name = new["metadata"]["name"] if new is not None else ""
        if available >= desired - _fenceposts(d)[1]:
            avail = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
        else:
            avail = ("False", "MinimumReplicasUnavailable",
                     "Deployment does not have minimum availability.")
        if (d.get("spec") or {}).get("paused") is True:
            progress = ("Unknown", "DeploymentPaused", "Deployment is paused")
        elif new is not None and updated == desired and replicas == desired and \
                available == desired:
            progress = ("True", "NewReplicaSetAvailable",
                        f'ReplicaSet "{name}" has successfully progressed.')
        elif created:
            progress = ("True", "NewReplicaSetCreated", f'Created new replica set "{name}"')
        else:
            progress = ("True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.')
        now = now_rfc3339()
        prev = {c.get("type"): c for c in old.get("conditions") or ()}
        conds = []
        for typ, (s, reason, msg) in (("Available", avail), ("Progressing", progress)):
            p = prev.get(typ) or {}
            same = (p.get("status"), p.get("reason"), p.get("message")) == (s, reason, msg)
            conds.append({"type": typ, "status": s,
                          "lastUpdateTime": p.get("lastUpdateTime") if same else now,
                          "lastTransitionTime": p.get("lastTransitionTime")
                          if p.get("status") == s else now,
                          "reason": reason, "message": msg})
        status["conditions"] = conds
        revision = str(_revision(new)) if new is not None else None
        ann = d["metadata"].get("annotations") or {}
        if status == old and (revision is None or ann.get(REVISION) == revision):
            return
        out = st.copy()
        out["status"] = status
        if revision is not None:
            out["metadata"].setdefault("annotations", {})[REVISION] = revision
        await self._write(self.deploy, st, out, "status")


def install(api: Api, index: OwnerIndex) -> tuple[ReplicaSetController, DeploymentController]:
    return ReplicaSetController(api, index), DeploymentController(api, index)
