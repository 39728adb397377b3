"""The gang cache: every gang the scheduler knows, fed by pod and PodGroup informer events.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/core/gang_cache.go``
(``onPodAdd``/``onPodUpdate``/``onPodDelete``, ``onPodGroupAdd``/``Update``/``Delete``) and
the gang-group state of ``ganggroup.go`` (``OnceResourceSatisfied``, binding members).

A PodGroup gang exists from its PodGroup's add to its delete; a pod-annotation gang appears
with its first pod and goes with its last. A gang annotation that cannot be used gives a
Warning event on the pod (or PodGroup) naming the key and value, and the fallback upstream
applies. When a pod or PodGroup completes a gang group (every gang of it has minMember
pods), ``on_ready`` gets the group's pending pods, so the queue asks PreEnqueue again and
releases them. A pod added to a group still incomplete is itself asked again (the queue may
have held it before this handler knew its gang) and the others go to ``on_held``: they stay
held, only their message's count changed — asking PreEnqueue for every member on every add
would cost members² queue moves while a gang arrives.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from api.extension.coscheduling import get_gang_id
from api.extension.objects import is_pod_terminated, namespaced_name
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.events.events import WARNING
from scheduler.apis.config import CoschedulingArgs
from scheduler.frameworkext.interface import EventRecorder
from scheduler.plugins.coscheduling.core.gang import (
    BadValue,
    Gang,
    PodDict,
    params_from_pod,
    params_from_pod_group,
)

log = logging.getLogger(__name__)

REASON_INVALID_GANG_ANNOTATION = "InvalidGangAnnotation"

OnReady = Callable[[Sequence[PodDict]], None]


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _node_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


class GangCache:
    """Gangs by id (``namespace/name``) and their groups' shared state, under one lock."""

    def __init__(self, args: CoschedulingArgs, recorder: EventRecorder | None = None,
                 on_ready: OnReady | None = None, on_held: OnReady | None = None) -> None:
        self.args = args
        self.recorder = recorder
        self.on_ready = on_ready
        self.on_held = on_held
        self.lock = threading.RLock()
        self.gangs: dict[str, Gang] = {}
        # Gang groups that once had a member bound (OnceResourceSatisfied, kept for good).
        self.once_satisfied: set[str] = set()
        # Group id → uids of the members allowed together at Permit (for PreBind).
        self.binding_members: dict[str, frozenset[str]] = {}

    # Queries -----------------------------------------------------------------------------

    def gang_of(self, pod: Mapping[str, Any]) -> Gang | None:
        gang_id = get_gang_id(pod)
        if not gang_id:
            return None
        with self.lock:
            return self.gangs.get(gang_id)

    def group_gangs(self, gang: Gang) -> list[Gang | None]:
        with self.lock:
            return [self.gangs.get(g) for g in gang.groups]

    def members(self, gang_id: str) -> tuple[list[str], int]:
        """The ``namespace/name`` keys of the gang's pods and how many of them are bound."""
        with self.lock:
            gang = self.gangs.get(gang_id)
            if gang is None:
                return [], 0
            return [namespaced_name(p) for p in gang.children.values()], len(gang.bound)

    def first_pending(self, gang_ids: Sequence[str], skip: set[str]) -> str | None:
        """The key of the first pending pod of the gangs (no node, not waiting at Permit,
        not finished) that is not in ``skip``."""
        with self.lock:
            for gang_id in gang_ids:
                gang = self.gangs.get(gang_id)
                if gang is None:
                    continue
                for uid, p in gang.children.items():
                    if uid in gang.waiting or uid in gang.bound or _node_name(p) or \
                            is_pod_terminated(p):
                        continue
                    key = namespaced_name(p)
                    if key not in skip:
                        return key
        return None

    def find_pod(self, key: str) -> tuple[Gang, str, PodDict] | None:
        """The gang, uid and object of the gang pod ``namespace/name`` (a scan: for the
        debug endpoint, not the scheduling path)."""
        with self.lock:
            for gang in self.gangs.values():
                for uid, pod in gang.children.items():
                    if namespaced_name(pod) == key:
                        return gang, uid, pod
        return None

    def is_once_satisfied(self, gang: Gang) -> bool:
        with self.lock:
            return gang.group_id in self.once_satisfied

    # Events ------------------------------------------------------------------------------

    def _warn(self, obj: Mapping[str, Any], kind: str, bad: Sequence[BadValue]) -> None:
        for b in bad:
            message = b.message(f"{kind} {namespaced_name(obj)}")
            log.warning("%s", message)
            if self.recorder is not None:
                self.recorder.eventf(obj, None, WARNING, REASON_INVALID_GANG_ANNOTATION,
                                     "Scheduling", "%s", message)

    def _get_or_create(self, gang_id: str) -> Gang:
        gang = self.gangs.get(gang_id)
        if gang is None:
            gang = self.gangs[gang_id] = Gang(gang_id)
        return gang

    def on_pod_add(self, pod: PodDict) -> None:
        gang_id = get_gang_id(pod)
        if not gang_id:
            return
        bad: list[BadValue] = []
        ready: list[PodDict] = []
        held: list[PodDict] = []
        with self.lock:
            gang = self._get_or_create(gang_id)
            if not gang.from_pod_group and gang.params is None:
                gang.params, bad = params_from_pod(pod, gang_id, self.args.default_timeout,
                                                   self.args.default_match_policy)
            uid = _uid(pod)
            before = len(gang.children)
            gang.children[uid] = pod
            if _node_name(pod):
                self._mark_bound(gang, uid)
            if not gang.initialised or before < gang.min_member:
                pending = self._pending_of_group(gang)
                if self._group_complete(gang):
                    ready = pending
                else:
                    for p in pending:
                        (ready if _uid(p) == uid else held).append(p)
        self._warn(pod, "pod", bad)
        if ready and self.on_ready is not None:
            self.on_ready(ready)
        if held and self.on_held is not None:
            self.on_held(held)

    def on_pod_update(self, old: PodDict, new: PodDict) -> None:
        if get_gang_id(old) != get_gang_id(new):
            self.on_pod_delete(old)
            self.on_pod_add(new)
            return
        gang_id = get_gang_id(new)
        if not gang_id:
            return
        with self.lock:
            gang = self.gangs.get(gang_id)
            if gang is None:
                return
            uid = _uid(new)
            gang.children[uid] = new
            if _node_name(new):
                self._mark_bound(gang, uid)

    def on_pod_delete(self, obj: Any) -> None:
        pod = deleted_object(obj)
        gang_id = get_gang_id(pod)
        if not gang_id:
            return
        with self.lock:
            gang = self.gangs.get(gang_id)
            if gang is None:
                return
            uid = _uid(pod)
            gang.children.pop(uid, None)
            gang.waiting.discard(uid)
            gang.bound.discard(uid)
            if not gang.children and not gang.from_pod_group:
                del self.gangs[gang_id]

    def on_pod_group_add(self, pg: PodDict) -> None:
        gang_id = namespaced_name(pg)
        params, bad = params_from_pod_group(pg, gang_id, self.args.default_timeout,
                                            self.args.default_match_policy)
        ready: list[PodDict] = []
        with self.lock:
            gang = self._get_or_create(gang_id)
            was_ready = gang.initialised and len(gang.children) >= gang.min_member
            gang.from_pod_group = True
            gang.params = params
            if not was_ready:
                ready = self._pending_of_group(gang)
        self._warn(pg, "PodGroup", bad)
        if ready and self.on_ready is not None:
            self.on_ready(ready)

    def on_pod_group_update(self, old: PodDict, new: PodDict) -> None:
        if (old.get("spec"), (old.get("metadata") or {}).get("annotations")) != (
                new.get("spec"), (new.get("metadata") or {}).get("annotations")):
            self.on_pod_group_add(new)

    def on_pod_group_delete(self, obj: Any) -> None:
        gang_id = namespaced_name(deleted_object(obj))
        with self.lock:
            gang = self.gangs.get(gang_id)
            if gang is None:
                return
            if gang.children:
                # Its pods stay, waiting for a PodGroup again, as pods of a gang not
                # initialised.
                gang.from_pod_group = False
                gang.params = None
            else:
                del self.gangs[gang_id]

    def pod_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.on_pod_add, self.on_pod_update, self.on_pod_delete)

    def pod_group_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.on_pod_group_add, self.on_pod_group_update,
                                 self.on_pod_group_delete)

    # Scheduling state --------------------------------------------------------------------

    def _mark_bound(self, gang: Gang, uid: str) -> None:
        gang.waiting.discard(uid)
        gang.bound.add(uid)
        self.once_satisfied.add(gang.group_id)

    def mark_bound(self, pod: Mapping[str, Any]) -> None:
        with self.lock:
            gang = self.gangs.get(get_gang_id(pod))
            if gang is not None:
                self._mark_bound(gang, _uid(pod))

    def group_complete(self, gang: Gang) -> bool:
        with self.lock:
            return self._group_complete(gang)

    def _group_complete(self, gang: Gang) -> bool:
        """Every gang of the group is known, initialised and has minMember pods."""
        for gang_id in gang.groups:
            g = self.gangs.get(gang_id)
            if g is None or not g.initialised or len(g.children) < g.min_member:
                return False
        return True

    def _pending_of_group(self, gang: Gang) -> list[PodDict]:
        """Pods of the gang and its group that wait for the scheduler. Their PreEnqueue
        answer changed: released if the group is complete, else held with a new message
        (a count, a gang now known). The new pod is among them: the queue may have held it
        before this handler saw it."""
        gangs = {g.id: g for g in (self.gangs.get(i) for i in (*gang.groups, gang.id))
                 if g is not None}
        return [p for g in gangs.values() for p in g.children.values()
                if not _node_name(p) and not is_pod_terminated(p)]
