"""Garbage collection by ownerReferences, inside the server.

Corresponds to upstream kube-controller-manager's ``pkg/controller/garbagecollector`` (the
dependency graph, ``attemptToDeleteItem``, ``orphanDependents``, the ``foregroundDeletion``
and ``orphan`` finalizers) for every resource the server stores, built-in or custom:

* **Background** (the default): once an owner is gone, each dependent whose ownerReferences
  name no live owner (by UID) is deleted; one with another live owner loses only the dead
  references. Unlike upstream, a dependent created naming owners that never existed is left
  alone: tests and the local cluster create pods naming controllers the server does not hold
  (a ReplicaSet by UID only, to make pods evictable), and collecting those would delete them
  under the test.
* **Foreground** (``propagationPolicy: Foreground``; ``api.delete`` adds the finalizer): the
  owner stays, with ``deletionTimestamp``, until its dependents are gone (they are deleted in
  the foreground too), then loses the finalizer and goes.
* **Orphan** (``propagationPolicy: Orphan`` or ``orphanDependents``): the dependents lose
  their references to the owner, then the owner loses the finalizer and goes.

The graph is an index from owner UID to dependents, kept as objects are written, so no write
scans anything. An ownerReference without a UID, or of a kind the server does not serve, is
never taken as dangling (upstream cannot resolve it either and keeps the dependent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from . import errors
from .api import MERGE_PATCH, Api
from .controllers import Debounced
from .resources import ResourceInfo
from .watch import Stored

log = logging.getLogger(__name__)

FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Ref:
    """One stored object, as the graph names it."""

    gr: tuple[str, str]
    namespace: str | None
    name: str
    uid: str


def owner_uids(obj: Obj) -> frozenset[str]:
    return frozenset(r["uid"] for r in obj["metadata"].get("ownerReferences") or ()
                     if isinstance(r, dict) and r.get("uid"))


def controller_ref(obj: Obj) -> Obj | None:
    """The ownerReference with ``controller: true``, if any."""
    for r in obj["metadata"].get("ownerReferences") or ():
        if isinstance(r, dict) and r.get("controller") and r.get("uid"):
            return r
    return None


class OwnerIndex:
    """Owner UID -> its dependents, and dependent -> its owners' UIDs."""

    def __init__(self) -> None:
        self.dependents: dict[str, set[Ref]] = {}
        self.owners: dict[Ref, frozenset[str]] = {}

    def of(self, owner_uid: str, gr: tuple[str, str] | None = None) -> list[Ref]:
        """The dependents of ``owner_uid`` (of resource ``gr`` only, when given)."""
        deps = self.dependents.get(owner_uid, ())
        return [d for d in deps if gr is None or d.gr == gr]

    def set(self, ref: Ref, uids: frozenset[str]) -> frozenset[str]:
        """Record ``ref``'s owners; returns the ones it had before."""
        old = self.owners.get(ref, frozenset())
        if old == uids:
            return old
        for u in old - uids:
            deps = self.dependents.get(u)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[u]
        for u in uids - old:
            self.dependents.setdefault(u, set()).add(ref)
        if uids:
            self.owners[ref] = uids
        else:
            self.owners.pop(ref, None)
        return old


def _ref(info: ResourceInfo, obj: Obj) -> Ref:
    md = obj["metadata"]
    return Ref(info.storage, md.get("namespace") if info.namespaced else None, md["name"],
               md["uid"])


class GarbageCollector:
    """Deletes dependents of deleted owners and runs the foreground and orphan finalizers."""

    def __init__(self, api: Api, interval: float = 0.05) -> None:
        self.api = api
        self.index = OwnerIndex()
        self.infos: dict[tuple[str, str], ResourceInfo] = {}
        self._kinds: dict[tuple[str, str], ResourceInfo | None] = {}
        self._kinds_generation = -1
        # Owners being deleted with the foreground or orphan finalizer, by UID.
        self.deleting: dict[str, Ref] = {}
        self.attempt: Debounced[Ref] = Debounced(self._attempt_to_delete, interval)
        self.finalize: Debounced[Ref] = Debounced(self._process_deleting_owner, interval)
        for info in api.registry.all():
            if info.from_storage is None:
                self.infos.setdefault(info.storage, info)
        # Objects restored from a previous run: index them.
        for gr, coll in api.storage.collections.items():
            served = self.infos.get(gr)
            if served is None:
                continue
            for st in list(coll.items.values()):
                self._on_write(served, "ADDED", st)
        api.after_write.append(self._on_write)

    # -- the graph --------------------------------------------------------------------------

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        obj = st.obj
        md = obj["metadata"]
        if "uid" not in md:
            return
        self.infos.setdefault(info.storage, info)
        ref = _ref(info, obj)
        if type_ == "DELETED":
            owners = self.index.set(ref, frozenset())
            self.deleting.pop(ref.uid, None)
            for dep in self.index.of(ref.uid):
                self.attempt.mark(dep)
            # An owner deleted in the foreground may have waited for this one only.
            for u in owners:
                waiting = self.deleting.get(u)
                if waiting is not None:
                    self.finalize.mark(waiting)
            return
        self.index.set(ref, owner_uids(obj))
        finalizers = md.get("finalizers") or ()
        if md.get("deletionTimestamp") and (FOREGROUND_FINALIZER in finalizers or
                                            ORPHAN_FINALIZER in finalizers):
            self.deleting[ref.uid] = ref
            self.finalize.mark(ref)
        else:
            self.deleting.pop(ref.uid, None)

    def _info_for(self, api_version: str, kind: str) -> ResourceInfo | None:
        reg = self.api.registry
        if reg.generation != self._kinds_generation:
            self._kinds.clear()
            self._kinds_generation = reg.generation
        key = (api_version, kind)
        if key not in self._kinds:
            group, _, version = api_version.rpartition("/")
            self._kinds[key] = reg.for_kind(group, version, kind)
        return self._kinds[key]

    def _lookup_owner(self, dependent: Ref, r: Obj) -> tuple[ResourceInfo, Stored | None] | None:
        """The owner an ownerReference names (None when its kind is not served)."""
        info = self._info_for(str(r.get("apiVersion") or ""), str(r.get("kind") or ""))
        if info is None or (info.namespaced and dependent.namespace is None):
            return None
        ns = dependent.namespace if info.namespaced else None
        return info, self.api.collection(info).get(ns, str(r.get("name") or ""))

    def _current(self, ref: Ref) -> Stored | None:
        info = self.infos.get(ref.gr)
        if info is None:
            return None
        st = self.api.collection(info).get(ref.namespace, ref.name)
        if st is None or st.obj["metadata"].get("uid") != ref.uid:
            return None
        return st

    # -- dependents -------------------------------------------------------------------------

    async def _attempt_to_delete(self, ref: Ref) -> None:
        st = self._current(ref)
        if st is None:
            return
        md = st.obj["metadata"]
        refs = [r for r in md.get("ownerReferences") or () if isinstance(r, dict)]
        dangling: set[str] = set()
        foreground = False
        for r in refs:
            if not r.get("uid"):
                continue
            found = self._lookup_owner(ref, r)
            if found is None:
                continue  # unresolvable: kept, as upstream
            owner = found[1]
            if owner is None or owner.obj["metadata"].get("uid") != r["uid"]:
                dangling.add(r["uid"])
            elif FOREGROUND_FINALIZER in (owner.obj["metadata"].get("finalizers") or ()) and \
                    owner.obj["metadata"].get("deletionTimestamp"):
                foreground = True
        if not dangling or md.get("deletionTimestamp"):
            return
        if len(dangling) < len(refs):
            await self._patch_owner_refs(ref, dangling)
            return
        policy = "Foreground" if foreground else "Background"
        await self._delete(ref, policy)

    async def _delete(self, ref: Ref, policy: str) -> None:
        info = self.infos[ref.gr]
        try:
            await self.api.delete(info, ref.namespace, ref.name,
                                  {"propagationPolicy": policy, "preconditions": {"uid": ref.uid}})
        except errors.ApiError as e:
            if e.code not in (404, 409):
                log.warning("garbage collector: deleting %s %s/%s: %s", info.plural,
                            ref.namespace or "", ref.name, e)

    async def _patch_owner_refs(self, ref: Ref, remove: set[str]) -> None:
        """Drop the references to the UIDs ``remove`` from ``ref``'s ownerReferences."""
        await self._patch_metadata(ref, "ownerReferences", lambda refs: [
            r for r in refs if not (isinstance(r, dict) and r.get("uid") in remove)])

    async def _patch_metadata(self, ref: Ref, field: str,
                              change: Callable[[list[Any]], list[Any]]) -> None:
        """Set the list ``metadata.<field>`` of ``ref`` to ``change`` of its current value,
        through the API (as upstream's collector, admission included); a conflict reads the
        object again."""
        info = self.infos[ref.gr]
        for _ in range(5):
            st = self._current(ref)
            if st is None:
                return
            md = st.obj["metadata"]
            value = change(list(md.get(field) or ()))
            patch = {"metadata": {field: value or None, "resourceVersion": md["resourceVersion"]}}
            try:
                await self.api.patch(info, ref.namespace, ref.name, MERGE_PATCH,
                                     orjson.dumps(patch))
                return
            except errors.ApiError as e:
                if e.code != 409:
                    log.warning("garbage collector: updating %s of %s %s/%s: %s", field,
                                info.plural, ref.namespace or "", ref.name, e)
                    return

    # -- owners being deleted ---------------------------------------------------------------

    async def _process_deleting_owner(self, ref: Ref) -> None:
        st = self._current(ref)
        if st is None or not st.obj["metadata"].get("deletionTimestamp"):
            return
        finalizers = st.obj["metadata"].get("finalizers") or ()
        if ORPHAN_FINALIZER in finalizers:
            for dep in self.index.of(ref.uid):
                await self._patch_owner_refs(dep, {ref.uid})
            done = ORPHAN_FINALIZER if not self.index.of(ref.uid) else None
        elif FOREGROUND_FINALIZER in finalizers:
            live = [(dep, cur) for dep in self.index.of(ref.uid)
                    if (cur := self._current(dep)) is not None]
            for dep, cur in live:
                if not cur.obj["metadata"].get("deletionTimestamp"):
                    await self._delete(dep, "Foreground")
            # Each dependent's deletion marks this owner again; the last one lets it go.
            done = FOREGROUND_FINALIZER if not live else None
        else:
            return
        if done is not None:
            await self._patch_metadata(ref, "finalizers",
                                       lambda fs: [f for f in fs if f != done])


def install(api: Api) -> GarbageCollector:
    return GarbageCollector(api)
