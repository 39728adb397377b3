"""The API semantics, independent of HTTP: create, get, list, update, patch, delete, watch.

Corresponds to upstream ``k8s.io/apiserver/pkg/registry/generic/registry.Store`` (system
metadata, optimistic concurrency, generation, finalizers and graceful deletion) plus the
request-scoped steps the handlers in ``k8s.io/apiserver/pkg/endpoints/handlers`` perform
(namespace checks, generateName, dry run, patch application). Everything runs on the server's
event loop: a write is applied synchronously, so no locks are needed; only admission may await,
and writes re-check the object they read before storing.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import orjson

from . import body as bodies
from . import errors
from .events import from_core, to_core
from .meta import (
    Cause,
    field_type_error,
    generate_name,
    meta_type_error,
    new_uid,
    now_rfc3339,
    validate_object_meta,
)
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .registry import Registry
from .resources import ResourceInfo
from .selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
    path_getter,
)
from .smp_meta import schema_for
from .storage import Collection, Storage, object_key
from .strategy import DEFAULT_STRATEGY, ClusterIPs, Strategy, builtin_strategies
from .watch import Stored, Watcher, default_encoder

Obj = dict[str, Any]
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Admission hook: (operation, info, new object or None (DELETE), old object or None (CREATE),
# dry_run, subresource) -> None; may raise ApiError; mutating hooks change ``new`` in place.
AdmissionHook = Callable[[str, ResourceInfo, Obj | None, Obj | None, bool, str | None],
                         Awaitable[None]]


class ListResult:
    __slots__ = ("items", "rv", "cont", "remaining")

    def __init__(self, items: list[Stored], rv: int, cont: str, remaining: int | None) -> None:
        self.items = items
        self.rv = rv
        self.cont = cont
        self.remaining = remaining


class Api:
    """The resource semantics shared by the HTTP layer and in-server controllers."""

    def __init__(self, storage: Storage | None = None, registry: Registry | None = None) -> None:
        self.storage = storage or Storage()
        self.registry = registry or Registry()
        self.cluster_ips = ClusterIPs()
        self.strategies: dict[tuple[str, str], Strategy] = builtin_strategies(self.cluster_ips)
        self.mutating: list[AdmissionHook] = []
        self.validating: list[AdmissionHook] = []
        # Hooks run after a write is stored: (info, event type, stored object).
        self.after_write: list[Callable[[ResourceInfo, str, Stored], None]] = []
        ev = self.registry.get("events.k8s.io", "v1", "events")
        if ev is not None:
            ev.to_storage = to_core
            ev.from_storage = from_core
        self._pod_node = path_getter("spec.nodeName")
        self.terminating_namespaces: set[str] = set()
        self._ns_task: asyncio.Task[None] | None = None
        # Every built-in watch cache starts now, so any resourceVersion a client saw can be
        # watched from (collections of custom resources start when their CRD is created).
        for info in self.registry.all():
            self.collection(info)

    def resume(self) -> None:
        """Carry on with objects restored from a previous run (persistence.py): their
        Services' cluster IPs stay taken and terminating namespaces finish emptying."""
        for st in self.storage.collection(("", "services"), True).items.values():
            self.cluster_ips.used.update((st.obj.get("spec") or {}).get("clusterIPs") or ())
        for st in self.storage.collection(("", "namespaces"), False).items.values():
            if st.obj["metadata"].get("deletionTimestamp"):
                self.terminating_namespaces.add(st.obj["metadata"]["name"])
        if self.terminating_namespaces:
            self._kick_namespace_controller()

    # -- helpers ----------------------------------------------------------------------------

    def collection(self, info: ResourceInfo) -> Collection:
        index = ("spec.nodeName", self._pod_node) if info.storage == ("", "pods") else None
        return self.storage.collection(info.storage, info.namespaced, index)

    def strategy(self, info: ResourceInfo) -> Strategy:
        return self.strategies.get(info.storage, DEFAULT_STRATEGY)

    def info(self, group: str, version: str, plural: str) -> ResourceInfo:
        i = self.registry.get(group, version, plural)
        if i is None:
            raise errors.not_found_path(f"{group}/{version}/{plural}")
        return i

    def view(self, info: ResourceInfo, st: Stored) -> Obj:
        """The stored object as the served version shows it (shared, do not mutate)."""
        obj = st.obj
        if info.from_storage is not None:
            return info.from_storage(obj)
        if obj.get("apiVersion") != info.api_version:
            out = dict(obj)
            out["apiVersion"] = info.api_version
            return out
        return obj

    def encode(self, info: ResourceInfo, st: Stored) -> bytes:
        if info.from_storage is None and st.obj.get("apiVersion") == info.api_version:
            return st.raw()
        return orjson.dumps(self.view(info, st))

    def _to_storage(self, info: ResourceInfo, obj: Obj) -> Obj:
        if info.to_storage is not None:
            return info.to_storage(obj)
        if info.crd is not None and info.version != info.storage_version:
            obj["apiVersion"] = f"{info.group}/{info.storage_version}"
        return obj

    def get_stored(self, info: ResourceInfo, ns: str | None, name: str) -> Stored:
        st = self.collection(info).get(ns if info.namespaced else None, name)
        if st is None:
            raise errors.not_found(info.group, info.plural, name)
        return st

    def namespace(self, name: str) -> Stored | None:
        return self.storage.collection(("", "namespaces"), False).get(None, name)

    def _check_namespace(self, info: ResourceInfo, ns: str | None, creating: bool) -> None:
        if not info.namespaced:
            return
        if not ns:
            raise errors.bad_request("the server could not find the requested resource: "
                                     "namespace is required")
        nso = self.namespace(ns)
        if nso is None:
            raise errors.not_found("", "namespaces", ns)
        if creating and nso.obj["metadata"].get("deletionTimestamp"):
            raise errors.ApiError(
                403, "Forbidden",
                f'{info.plural}{"." + info.group if info.group else ""} is forbidden: unable '
                f'to create new content in namespace {ns} because it is being terminated',
                {"kind": info.plural, **({"group": info.group} if info.group else {}),
                 "causes": [{"reason": "NamespaceTerminating",
                             "message": f"namespace {ns} is being terminated",
                             "field": "metadata.namespace"}]})

    def _check_type(self, info: ResourceInfo, obj: Any) -> Obj:
        if not isinstance(obj, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        av = obj.get("apiVersion")
        kind = obj.get("kind")
        if av and av != info.api_version:
            raise errors.bad_request(
                f"the API version in the data ({av}) does not match the expected API version "
                f"({info.api_version})")
        if kind and kind != info.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({info.kind})")
        obj["apiVersion"] = info.api_version
        obj["kind"] = info.kind
        md = obj.get("metadata")
        if md is None:
            md = obj["metadata"] = {}
        elif not isinstance(md, dict):
            raise errors.bad_request("metadata must be an object")
        why = meta_type_error(md) or field_type_error(info.kind, obj)
        if why is not None:
            raise errors.bad_request(f'{info.kind} in version "{info.version}" cannot be '
                                     f"handled as a {info.kind}: {why}")
        return obj

    @staticmethod
    def _validate_meta(obj: Obj, strat: Strategy) -> list[Cause]:
        return validate_object_meta(obj["metadata"], strat.name_fn)

    @staticmethod
    def _prune(info: ResourceInfo, strat: Strategy, obj: Obj, field_validation: str) -> None:
        """Drop fields a CRD schema does not declare; an error under fieldValidation=Strict.
        Under Strict a built-in object (kept as sent) is checked against the official client's
        models instead; one this server converts between versions is left alone."""
        prune = getattr(strat, "prune", None)
        if prune is not None:
            unknown = prune(obj)
        elif field_validation == "Strict" and info.crd is None and info.to_storage is None:
            # imported here: the client's models take a second to import, and only Strict
            # writes of built-in objects need them
            from .builtin_schema import unknown_fields

            unknown = unknown_fields(obj)
        else:
            return
        if unknown and field_validation == "Strict":
            msg = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.bad_request(f"strict decoding error: {msg}")

    async def _admit(self, hooks: list[AdmissionHook], op: str, info: ResourceInfo,
                     new: Obj | None, old: Obj | None, dry_run: bool,
                     subresource: str | None = None) -> None:
        for hook in hooks:
            await hook(op, info, new, old, dry_run, subresource)

    def _finish_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        for fn in self.after_write:
            fn(info, type_, st)

    # -- create -----------------------------------------------------------------------------

    async def create(self, info: ResourceInfo, ns: str | None, body: Any, *,
                     dry_run: bool = False, field_validation: str = "") -> Stored:
        obj = self._check_type(info, body)
        md = obj["metadata"]
        if info.namespaced:
            bns = md.get("namespace")
            if bns and ns and bns != ns:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            ns = ns or bns
            md["namespace"] = ns
        else:
            md.pop("namespace", None)
            ns = None
        self._check_namespace(info, ns, creating=True)
        obj = self._to_storage(info, obj)
        md = obj["metadata"]
        strat = self.strategy(info)
        if not md.get("name") and md.get("generateName"):
            md["name"] = generate_name(md["generateName"])
        with _typed(info):
            self._prune(info, strat, obj, field_validation)
            if strat.default is not None:
                strat.default(obj)
            await self._admit(self.mutating, "CREATE", info, obj, None, dry_run)
            md = obj["metadata"]
            md["uid"] = new_uid()
            md["creationTimestamp"] = now_rfc3339()
            for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion",
                      "selfLink"):
                md.pop(k, None)
            if info.generation:
                md["generation"] = 1
            else:
                md.pop("generation", None)
            if info.has_status and not strat.keep_status_on_create:
                obj.pop("status", None)
            if strat.prepare_create is not None:
                strat.prepare_create(obj)
            causes = self._validate_meta(obj, strat)
            if strat.validate is not None:
                causes += strat.validate(obj)
            if causes:
                raise errors.invalid(info.group, info.kind, md.get("name") or "", causes)
            await self._admit(self.validating, "CREATE", info, obj, None, dry_run)
            bodies.check_storable(info.group, info.kind, obj)
        coll = self.collection(info)
        if info.namespaced:
            self._check_namespace(info, ns, creating=True)
        for attempt in range(5):
            if coll.get(ns, md["name"]) is None:
                break
            if md.get("generateName") and attempt < 4:
                md["name"] = generate_name(md["generateName"])
                continue
            raise errors.already_exists(info.group, info.plural, md["name"])
        if dry_run:
            return Stored(obj)
        st = self.storage.create(coll, obj)
        self._finish_write(info, "ADDED", st)
        return st

    # -- read -------------------------------------------------------------------------------

    def get(self, info: ResourceInfo, ns: str | None, name: str) -> Stored:
        return self.get_stored(info, ns, name)

    def predicate(self, info: ResourceInfo, ns: str | None, labels: LabelSelector,
                  fields: FieldSelector) -> Callable[[Obj], bool] | None:
        getters = info.field_getters()
        ns_filter = ns if info.namespaced and ns else None
        if labels.empty and fields.empty and ns_filter is None:
            return None

        # Field selectors are evaluated on the stored form (core/v1 for events), as upstream
        # converts field labels of other versions to the storage version's.
        def pred(obj: Obj) -> bool:
            md = obj["metadata"]
            if ns_filter is not None and md.get("namespace") != ns_filter:
                return False
            if not labels.matches(md.get("labels")):
                return False
            if not fields.empty:
                return fields.matches(obj, getters)
            return True

        return pred

    def parse_selectors(self, info: ResourceInfo, label_selector: str | None,
                        field_selector: str | None) -> tuple[LabelSelector, FieldSelector]:
        return (parse_label_selector(label_selector),
                parse_field_selector(field_selector, info.field_getters(), info.plural))

    def list(self, info: ResourceInfo, ns: str | None, label_selector: str | None = None,
             field_selector: str | None = None, limit: int = 0,
             cont: str | None = None) -> ListResult:
        labels, fields = self.parse_selectors(info, label_selector, field_selector)
        coll = self.collection(info)
        ns = ns if info.namespaced else None
        if cont:
            token = _decode_continue(cont)
            snap = self.storage.snapshot(token.get("id", 0))
            if snap is not None:
                items = snap.items[token.get("off", 0):]
                rv = snap.rv
                return self._page(items, rv, limit, token.get("id", 0),
                                  token.get("off", 0), labels, fields)
            # The snapshot expired: carry on from the last key on current data.
            start = token.get("start", "")
            items = [st for st in self._select(info, coll, ns, labels, fields)
                     if object_key(st.obj["metadata"].get("namespace") if info.namespaced
                                   else None, st.obj["metadata"]["name"]) > start]
            return self._page(items, self.storage.rv, limit, 0, 0, labels, fields)
        items = self._select(info, coll, ns, labels, fields)
        return self._page(items, self.storage.rv, limit, 0, 0, labels, fields)

    def _select(self, info: ResourceInfo, coll: Collection, ns: str | None,
                labels: LabelSelector, fields: FieldSelector) -> builtins.list[Stored]:
        node = fields.equality_value("spec.nodeName") if coll.index is not None else None
        name = fields.equality_value("metadata.name")
        if name is not None and (ns or not info.namespaced):
            st = coll.get(ns, name)
            items = [st] if st is not None else []
        elif node is not None:
            items = coll.indexed(node)
        else:
            items = coll.sorted_items(ns)
            ns = None  # already filtered by the namespace index
        pred = self.predicate(info, ns, labels, fields)
        if pred is None:
            return items
        return [st for st in items if pred(st.obj)]

    def _page(self, items: builtins.list[Stored], rv: int, limit: int, sid: int, off: int,
              labels: LabelSelector, fields: FieldSelector) -> ListResult:
        if limit <= 0 or len(items) <= limit:
            return ListResult(items, rv, "", None)
        if sid == 0:
            sid = self.storage.save_snapshot(rv, items)
            base = items
            off = 0
        else:
            base = items
        page = base[:limit]
        last = page[-1].obj["metadata"]
        token = _encode_continue({
            "v": "meta.k8s.io/v1", "rv": rv, "id": sid, "off": off + limit,
            "start": object_key(last.get("namespace"), last["name"])})
        remaining = len(base) - limit if labels.empty and fields.empty else None
        return ListResult(page, rv, token, remaining)

    # -- update -----------------------------------------------------------------------------

    async def update(self, info: ResourceInfo, ns: str | None, name: str, body: Any, *,
                     subresource: str | None = None, dry_run: bool = False,
                     field_validation: str = "") -> Stored:
        obj = self._check_type(info, body)
        md = obj["metadata"]
        if md.get("name") and md["name"] != name:
            raise errors.bad_request(f"the name of the object ({md['name']}) does not match the "
                                     f"name on the URL ({name})")
        md["name"] = name
        if info.namespaced:
            if md.get("namespace") and md["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            md["namespace"] = ns
        self._check_namespace(info, ns, creating=False)
        coll = self.collection(info)
        old = coll.get(ns if info.namespaced else None, name)
        if old is None:
            if self.strategy(info).create_on_update and subresource is None:
                return await self.create(info, ns, obj, dry_run=dry_run,
                                         field_validation=field_validation)
            raise errors.not_found(info.group, info.plural, name)
        want_rv = md.get("resourceVersion")
        if want_rv and want_rv != old.obj["metadata"]["resourceVersion"]:
            raise errors.stale_update(info.group, info.plural, name)
        obj = self._to_storage(info, obj)
        return await self._update(info, coll, obj, old, subresource, dry_run, field_validation)

    async def _update(self, info: ResourceInfo, coll: Collection, obj: Obj, old: Stored,
                      subresource: str | None, dry_run: bool,
                      field_validation: str = "") -> Stored:
        strat = self.strategy(info)
        with _typed(info):
            self._prune(info, strat, obj, field_validation)
            o = old.obj
            om = o["metadata"]
            if subresource == "status":
                new = dict(o)
                new["metadata"] = dict(om)
                if "status" in obj:
                    new["status"] = obj["status"]
                else:
                    new.pop("status", None)
                if info.crd is None:
                    # Built-in status updates may also change labels and annotations.
                    for k in ("labels", "annotations"):
                        if k in obj["metadata"]:
                            new["metadata"][k] = obj["metadata"][k]
                        else:
                            new["metadata"].pop(k, None)
                obj = new
            else:
                if strat.default is not None:
                    strat.default(obj)
                if info.has_status:
                    if "status" in o:
                        obj["status"] = o["status"]
                    else:
                        obj.pop("status", None)
                if strat.prepare_update is not None:
                    strat.prepare_update(obj, o)
            md = obj["metadata"]
            for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation"):
                if k in om:
                    md[k] = om[k]
                else:
                    md.pop(k, None)
            md["resourceVersion"] = om["resourceVersion"]
            if om.get("deletionTimestamp"):
                added = set(md.get("finalizers") or []) - set(om.get("finalizers") or [])
                if added:
                    raise errors.invalid(info.group, info.kind, md["name"], [(
                        "FieldValueForbidden", "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers {sorted(added)!r}")])
            await self._admit(self.mutating, "UPDATE", info, obj, o, dry_run, subresource)
            if info.generation and self._spec_changed(info, obj, o):
                md["generation"] = int(om.get("generation") or 0) + 1
            causes = self._validate_meta(obj, strat)
            if strat.validate is not None:
                causes += strat.validate(obj)
            if strat.validate_update is not None:
                causes += strat.validate_update(obj, o)
            if causes:
                raise errors.invalid(info.group, info.kind, md["name"], causes)
            await self._admit(self.validating, "UPDATE", info, obj, o, dry_run, subresource)
            bodies.check_storable(info.group, info.kind, obj)
        cur = coll.get(md.get("namespace") if info.namespaced else None, md["name"])
        if cur is not old:
            raise errors.stale_update(info.group, info.plural, md["name"])
        if dry_run:
            return Stored(obj)
        if obj == o:
            return old  # a no-op update does not change the resourceVersion
        if md.get("deletionTimestamp") and not md.get("finalizers") and \
                md.get("deletionGracePeriodSeconds", 0) == 0:
            st = self.storage.delete(coll, old, final=obj)
            self._finish_write(info, "DELETED", st)
            return st
        st = self.storage.update(coll, obj, old)
        self._finish_write(info, "MODIFIED", st)
        return st

    @staticmethod
    def _spec_changed(info: ResourceInfo, new: Obj, old: Obj) -> bool:
        skip = {"metadata", "apiVersion", "kind"}
        if info.has_status or info.crd is None:
            skip.add("status")
        keys = (set(new) | set(old)) - skip
        return any(new.get(k) != old.get(k) for k in keys)

    # -- patch ------------------------------------------------------------------------------

    async def patch(self, info: ResourceInfo, ns: str | None, name: str, patch_type: str,
                    body: bytes, *, subresource: str | None = None, dry_run: bool = False,
                    field_validation: str = "") -> Stored:
        if patch_type == STRATEGIC_PATCH and not info.strategic:
            raise errors.unsupported_media_type(patch_type)
        if patch_type == APPLY_PATCH:
            return await self._apply(info, ns, name, body, subresource, dry_run)
        patch = bodies.decode_json(body, "error decoding patch")
        self._check_namespace(info, ns, creating=False)
        coll = self.collection(info)
        for _ in range(10):
            old = coll.get(ns if info.namespaced else None, name)
            if old is None:
                raise errors.not_found(info.group, info.plural, name)
            cur = orjson.loads(self.encode(info, old))
            try:
                if patch_type == JSON_PATCH:
                    new = json_patch(cur, patch)
                elif patch_type == MERGE_PATCH:
                    new = merge_patch(cur, patch)
                elif patch_type == STRATEGIC_PATCH:
                    new = strategic_merge_patch(cur, patch, schema_for(info.storage))
                else:
                    raise errors.unsupported_media_type(patch_type)
            except PatchError as e:
                raise errors.ApiError(422, "Invalid", str(e)) from None
            if not isinstance(new, dict):
                raise errors.bad_request("the patched object is not a JSON object")
            new = self._check_type(info, new)
            bodies.check_storable(info.group, info.kind, new)
            md = new["metadata"]
            if md.get("name") != name or (info.namespaced and md.get("namespace") != ns):
                raise errors.bad_request("metadata.name and metadata.namespace may not be "
                                         "changed by a patch")
            want_rv = md.get("resourceVersion")
            if want_rv and want_rv != old.obj["metadata"]["resourceVersion"]:
                raise errors.stale_update(info.group, info.plural, name)
            new = self._to_storage(info, new)
            try:
                return await self._update(info, coll, new, old, subresource, dry_run,
                                          field_validation)
            except errors.ApiError as e:
                if e.code == 409 and e.reason == "Conflict" and not want_rv and \
                        coll.get(ns if info.namespaced else None, name) is not old:
                    continue  # the object changed while admission ran: patch again
                raise
        raise errors.stale_update(info.group, info.plural, name)

    async def _apply(self, info: ResourceInfo, ns: str | None, name: str, body: bytes,
                     subresource: str | None, dry_run: bool) -> Stored:
        """Server-side apply, simplified: create if absent, else a JSON merge of the intent."""
        intent = bodies.decode_yaml(body, "error decoding YAML")
        if not isinstance(intent, dict):
            raise errors.bad_request("the apply body must be an object")
        coll = self.collection(info)
        old = coll.get(ns if info.namespaced else None, name)
        if old is None:
            if subresource is not None:
                raise errors.not_found(info.group, info.plural, name)
            intent.setdefault("metadata", {})["name"] = name
            return await self.create(info, ns, intent, dry_run=dry_run)
        return await self.patch(info, ns, name, MERGE_PATCH, orjson.dumps(intent),
                                subresource=subresource, dry_run=dry_run)

    # -- delete -----------------------------------------------------------------------------

    async def delete(self, info: ResourceInfo, ns: str | None, name: str,
                     options: Obj | None = None, *, dry_run: bool = False) -> Stored:
        options = options or {}
        bodies.check_delete_options(options)
        self._check_namespace(info, ns, creating=False)
        coll = self.collection(info)
        old = coll.get(ns if info.namespaced else None, name)
        if old is None:
            raise errors.not_found(info.group, info.plural, name)
        pre = options.get("preconditions") or {}
        om = old.obj["metadata"]
        if pre.get("uid") and pre["uid"] != om.get("uid"):
            raise errors.conflict(info.group, info.plural, name,
                                  f"Precondition failed: UID in precondition: {pre['uid']}, "
                                  f"UID in object meta: {om.get('uid')}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != om.get("resourceVersion"):
            raise errors.conflict(info.group, info.plural, name,
                                  "Precondition failed: ResourceVersion in precondition: "
                                  f"{pre['resourceVersion']}, ResourceVersion in object meta: "
                                  f"{om.get('resourceVersion')}")
        await self._admit(self.validating, "DELETE", info, None, old.obj, dry_run)
        if coll.get(ns if info.namespaced else None, name) is not old:
            raise errors.conflict(info.group, info.plural, name,
                                  "the object has been modified during deletion")
        if info.storage == ("", "namespaces"):
            return self._delete_namespace(info, coll, old, dry_run)
        grace = self._grace_period(info, old.obj, options)
        old_finalizers = om.get("finalizers") or []
        finalizers = _gc_finalizers(old_finalizers, options)
        if grace == 0 and not finalizers:
            if dry_run:
                return old
            st = self.storage.delete(coll, old)
            self._finish_write(info, "DELETED", st)
            return st
        # Graceful or finalized deletion: mark the object.
        new = old.copy()
        md = new["metadata"]
        if om.get("deletionTimestamp") and grace >= om.get("deletionGracePeriodSeconds", 0):
            # already being deleted; a longer grace period does not extend it
            if finalizers == old_finalizers:
                return old
            grace = om.get("deletionGracePeriodSeconds", 0)
        else:
            md["deletionTimestamp"] = now_rfc3339(time.time() + grace)
            md["deletionGracePeriodSeconds"] = grace
        if finalizers != old_finalizers:
            md["finalizers"] = finalizers
        if info.generation and "generation" in md and not om.get("deletionTimestamp"):
            md["generation"] = int(md["generation"]) + 1
        if dry_run:
            return Stored(new)
        if grace == 0 and not finalizers:
            st = self.storage.delete(coll, old, final=new)
            self._finish_write(info, "DELETED", st)
            return st
        st = self.storage.update(coll, new, old)
        self._finish_write(info, "MODIFIED", st)
        return st

    @staticmethod
    def _grace_period(info: ResourceInfo, obj: Obj, options: Obj) -> int:
        """Seconds of graceful deletion: only pods bound to a node and still running get any."""
        if info.storage != ("", "pods"):
            return 0
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        grace = max(0, int(grace))
        return grace

    async def delete_collection(self, info: ResourceInfo, ns: str | None,
                                label_selector: str | None, field_selector: str | None,
                                options: Obj | None = None, *, dry_run: bool = False
                                ) -> builtins.list[Stored]:
        res = self.list(info, ns, label_selector, field_selector)
        out = []
        for st in res.items:
            md = st.obj["metadata"]
            try:
                out.append(await self.delete(info, md.get("namespace"), md["name"], options,
                                             dry_run=dry_run))
            except errors.ApiError as e:
                if e.code != 404:
                    raise
        return out

    # -- namespaces -------------------------------------------------------------------------

    def _delete_namespace(self, info: ResourceInfo, coll: Collection, old: Stored,
                          dry_run: bool) -> Stored:
        name = old.obj["metadata"]["name"]
        if name in UNDELETABLE_NAMESPACES:
            raise errors.forbidden("", "namespaces", name, "this namespace may not be deleted")
        if old.obj["metadata"].get("deletionTimestamp"):
            return old
        new = old.copy()
        new["metadata"]["deletionTimestamp"] = now_rfc3339()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new["status"] = {"phase": "Terminating"}
        if dry_run:
            return Stored(new)
        st = self.storage.update(coll, new, old)
        self._finish_write(info, "MODIFIED", st)
        self.terminating_namespaces.add(name)
        self._kick_namespace_controller()
        return st

    def _kick_namespace_controller(self) -> None:
        if self._ns_task is None or self._ns_task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._ns_task = loop.create_task(self._namespace_controller())

    async def _namespace_controller(self) -> None:
        """Empties terminating namespaces, then removes them (the namespace controller)."""
        while self.terminating_namespaces:
            for ns in list(self.terminating_namespaces):
                if await self._finalize_namespace(ns):
                    self.terminating_namespaces.discard(ns)
            await asyncio.sleep(0.05)

    async def _finalize_namespace(self, ns: str) -> bool:
        remaining = 0
        for info in self._namespaced_storage_infos():
            coll = self.collection(info)
            for st in list(coll.by_ns.get(ns, {}).values()):
                remaining += 1
                md = st.obj["metadata"]
                if md.get("deletionTimestamp"):
                    continue
                try:
                    await self.delete(info, ns, md["name"])
                except errors.ApiError:
                    pass
        if remaining:
            return False
        coll = self.storage.collection(("", "namespaces"), False)
        ns_st = coll.get(None, ns)
        if ns_st is None:
            return True
        if ns_st.obj["metadata"].get("finalizers"):
            return False
        final = ns_st.copy()
        final.get("spec", {}).pop("finalizers", None)
        info = self.info("", "v1", "namespaces")
        dst = self.storage.delete(coll, ns_st, final=final)
        self._finish_write(info, "DELETED", dst)
        return True

    def _namespaced_storage_infos(self) -> builtins.list[ResourceInfo]:
        seen: dict[tuple[str, str], ResourceInfo] = {}
        for info in self.registry.all():
            if info.namespaced and info.storage not in seen and "delete" in info.verbs:
                seen[info.storage] = info
        return list(seen.values())

    # -- watch ------------------------------------------------------------------------------

    def watch(self, info: ResourceInfo, ns: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str = "",
              bookmarks: bool = False, send_initial_events: bool | None = None,
              encoder: Callable[[str, Stored], bytes] | None = None) -> Watcher:
        """Register a watcher; its buffer already holds the initial or replayed events."""
        labels, fields = self.parse_selectors(info, label_selector, field_selector)
        coll = self.collection(info)
        ns = ns if info.namespaced else None
        pred = self.predicate(info, ns, labels, fields) or _always
        if encoder is None:
            if info.from_storage is None and info.crd is None:
                encoder = default_encoder
            else:
                def encoder(t: str, st: Stored, _i: ResourceInfo = info) -> bytes:
                    return b'{"type":"' + t.encode() + b'","object":' + \
                        self.encode(_i, st) + b"}\n"
        index_value = None
        node = fields.equality_value("spec.nodeName") if coll.index is not None else None
        if node is not None:
            index_value = ("spec.nodeName", node)
        w = Watcher(pred, encoder, namespace=ns, index_value=index_value, bookmarks=bookmarks)
        rv = resource_version or ""
        initial = send_initial_events if send_initial_events is not None else rv in ("", "0")
        if initial:
            for st in self._select(info, coll, ns, labels, fields):
                w.push(encoder("ADDED", st))
            w.last_rv = self.storage.rv
            if send_initial_events and bookmarks:
                w.push(self.bookmark(info, self.storage.rv, initial_end=True))
        else:
            try:
                start = int(rv) if rv not in ("", "0") else self.storage.rv
            except ValueError:
                raise errors.bad_request(f"invalid resource version: {rv!r}") from None
            if start > self.storage.rv:
                # A client resuming against a restarted (emptier) server must relist.
                raise errors.resource_version_too_large(start, self.storage.rv)
            if coll.watch.too_old(start):
                err = errors.gone(f"too old resource version: {start} ({coll.watch.window_rv})")
                w.push(b'{"type":"ERROR","object":' + orjson.dumps(err.status()) + b"}\n")
                w.closed = True
                return w
            for ev in coll.watch.since(start):
                w.deliver(ev)
            w.last_rv = max(start, w.last_rv)
        coll.watch.add(w)
        return w

    def bookmark(self, info: ResourceInfo, rv: int, initial_end: bool = False) -> bytes:
        md: Obj = {"resourceVersion": str(rv), "creationTimestamp": None}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        return orjson.dumps({"type": "BOOKMARK", "object": {
            "kind": info.kind, "apiVersion": info.api_version, "metadata": md}}) + b"\n"


@contextlib.contextmanager
def _typed(info: ResourceInfo) -> Iterator[None]:
    """Strategies and admission read fields as the Go types hold them. A field of another JSON
    type fails there; kube-apiserver's typed decoding answers it with 400, so do we (not 500)."""
    try:
        yield
    except (AttributeError, TypeError, KeyError) as e:
        raise errors.bad_request(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: a '
            f"field has the wrong JSON type ({type(e).__name__}: {e})") from None


def _gc_finalizers(finalizers: builtins.list[str], options: Obj) -> builtins.list[str]:
    """The finalizers of an object being deleted with ``options``: the propagation policy
    (or ``orphanDependents``) sets the garbage collector's ``orphan`` or
    ``foregroundDeletion`` finalizer, which ``gc.py`` removes once it has orphaned or deleted
    the dependents; without either, the ones set by an earlier deletion stay (upstream's
    ``deletionFinalizersForGarbageCollection``)."""
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    if policy is None:
        return finalizers
    rest = [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
    if policy == "Orphan":
        rest.append("orphan")
    elif policy == "Foreground":
        rest.append("foregroundDeletion")
    return rest if set(rest) != set(finalizers) else finalizers


def _always(_: Obj) -> bool:
    return True


def _encode_continue(d: Obj) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(d)).decode().rstrip("=")


def _decode_continue(s: str) -> Obj:
    try:
        d = orjson.loads(base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)))
        if not isinstance(d, dict):
            raise ValueError
        return d
    except (ValueError, orjson.JSONDecodeError):
        raise errors.bad_request("continue key is not valid: incorrect encoded start "
                                 "resourceVersion (version meta.k8s.io/v1)") from None
