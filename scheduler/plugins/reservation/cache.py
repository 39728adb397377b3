"""The Reservation plugin's cache: Available Reservations, their consumers, indexed for matching.

Corresponds to upstream ``pkg/scheduler/frameworkext/reservation_info.go`` (``ReservationInfo``:
allocatable, allocated, assigned pods, allocate-once/policy, order) and the plugin's
``cache.go`` (``reservationCache``: by UID, by node, assume/forget of consumer pods),
scheduler.md §7.2-7.3.

Beyond upstream, for speed with thousands of Reservations:

* an **owner index** (object uid or name, controller uid or name, one ``matchLabels`` pair of a
  label selector; owners with none of these are scanned for every pod) narrows the
  Reservations a pod could match to a handful before the full owner check;
* the reserve pod this cache keeps in the **scheduler cache** for an Available Reservation
  requests only what is left of it (``allocatable − allocated`` per resource, never below 0)
  once consumers are assigned to it, while the consumers count themselves. A node therefore
  counts a Reservation's resources once, for every pod, with no per-cycle correction (upstream
  subtracts the allocated part of each unmatched Reservation on every node, every cycle,
  §7.4 step 2).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from api.errors import MalformedValueError
from api.extension.objects import is_pod_terminated
from api.extension.reservation import get_reservation_order, parse_reservation_allocated
from api.scheduling.v1alpha1.reservation import Reservation, ReservationOwner
from pkg.util.podresources import pod_requests, resource_list
from pkg.util.reservation import (
    is_reservation_available,
    match_reservation_owners,
    new_reserve_pod,
    with_requests,
)
from scheduler.framework.types import PodInfo, pod_key
from scheduler.frameworkext.interface import SchedulerAdapter

log = logging.getLogger(__name__)

IndexKey = tuple[str, ...]


@dataclass(slots=True)
class ReservationInfo:
    """An Available Reservation and the pods consuming it."""

    reservation: Reservation
    uid: str
    name: str
    node_name: str
    allocatable: dict[str, int]
    allocatable_quantities: dict[str, str]
    owners: list[ReservationOwner]
    allocate_once: bool
    allocate_policy: str
    order: int
    reserve_pod: dict[str, Any]  # as upstream's NewReservePod (full allocatable)
    # Consumer pod uid → its requests masked to the Reservation's resources. Replaced, never
    # changed in place: the scheduling thread reads it without the cache's lock.
    assigned: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """The reserve pod's key in the scheduler cache."""
        return pod_key(self.reserve_pod)

    @property
    def resource_names(self) -> Iterable[str]:
        return self.allocatable.keys()

    @property
    def allocated(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for requests in self.assigned.values():
            for name, v in requests.items():
                out[name] = out.get(name, 0) + v
        return out

    @property
    def available(self) -> dict[str, int]:
        """``max(0, allocatable − allocated)`` per resource."""
        allocated = self.allocated
        return {name: max(0, v - allocated.get(name, 0)) for name, v in self.allocatable.items()}

    def matchable(self) -> bool:
        """Not an allocate-once Reservation that already has its consumer."""
        return not (self.allocate_once and self.assigned)

    def masked(self, requests: Mapping[str, int]) -> dict[str, int]:
        return {name: v for name, v in requests.items() if name in self.allocatable}

    def cache_pod(self) -> dict[str, Any]:
        """The reserve pod the scheduler cache counts on the node: what is left of it."""
        if not self.assigned:
            return self.reserve_pod
        return with_requests(self.reserve_pod, self.available)


def new_reservation_info(r: Reservation, assigned: dict[str, dict[str, int]] | None = None
                         ) -> ReservationInfo:
    assert r.status is not None
    info = ReservationInfo(
        reservation=r, uid=r.metadata.uid or "", name=r.metadata.name or "",
        node_name=r.status.node_name or "", allocatable=resource_list(r.status.allocatable),
        allocatable_quantities={k: str(v) for k, v in (r.status.allocatable or {}).items()},
        owners=list(r.spec.owners), allocate_once=r.spec.allocate_once_effective,
        allocate_policy=r.spec.allocate_policy_effective,
        order=get_reservation_order(r.metadata.labels), reserve_pod=new_reserve_pod(r))
    info.assigned = {uid: info.masked(requests) for uid, requests in (assigned or {}).items()}
    return info


def _owner_index_key(owner: ReservationOwner) -> IndexKey | None:
    """The most selective key a matching pod must have, None when there is none."""
    if owner.object is not None:
        if owner.object.uid:
            return ("uid", owner.object.uid)
        if owner.object.name:
            return ("name", owner.object.name)
    if owner.controller is not None:
        if owner.controller.uid:
            return ("owner-uid", owner.controller.uid)
        if owner.controller.name:
            return ("owner-name", owner.controller.name)
    sel = owner.label_selector
    if sel is not None and sel.match_labels:
        k, v = next(iter(sorted(sel.match_labels.items())))
        return ("label", k, v)
    return None


def _pod_index_keys(pod: PodInfo) -> Iterator[IndexKey]:
    meta = pod.pod.get("metadata") or {}
    yield ("uid", pod.uid)
    yield ("name", pod.name)
    for o in meta.get("ownerReferences") or ():
        if o.get("uid"):
            yield ("owner-uid", o["uid"])
        if o.get("name"):
            yield ("owner-name", o["name"])
    for k, v in pod.labels.items():
        yield ("label", k, v)


def consumed_reservation_uid(pod: Mapping[str, Any]) -> str | None:
    """The Reservation a live bound pod consumes (its reservation-allocated annotation)."""
    if not (pod.get("spec") or {}).get("nodeName") or is_pod_terminated(pod):
        return None
    try:
        allocated = parse_reservation_allocated(
            (pod.get("metadata") or {}).get("annotations"))
    except MalformedValueError:
        return None
    return allocated.uid if allocated is not None and allocated.uid else None


class ReservationCache:
    """Available Reservations by UID, by node and by owner, with their consumers; keeps the
    scheduler cache's reserve pods in step (through ``adapter`` once attached)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._infos: dict[str, ReservationInfo] = {}
        self._by_node: dict[str, dict[str, ReservationInfo]] = {}
        self._by_owner: dict[IndexKey, set[str]] = {}
        self._unindexed: set[str] = set()
        # Consumer pod uid → (reservation uid, masked requests); also for Reservations not
        # (yet) known, so that a Reservation seen after its consumers counts them.
        self._consumers: dict[str, tuple[str, dict[str, int]]] = {}
        self.adapter: SchedulerAdapter | None = None
        self._controller_claimed = False

    def claim_controller(self) -> bool:
        """True once: the Reservation controller of the scheduler this cache serves is
        started by the plugin instance (of the first profile) that claims it."""
        with self._lock:
            claimed, self._controller_claimed = self._controller_claimed, True
            return not claimed

    # Reading -----------------------------------------------------------------------------

    def get(self, uid: str) -> ReservationInfo | None:
        with self._lock:
            return self._infos.get(uid)

    def on_node(self, node: str) -> list[ReservationInfo]:
        with self._lock:
            return list(self._by_node.get(node, {}).values())

    def by_node(self) -> dict[str, list[ReservationInfo]]:
        """Every node with Available Reservations, and those."""
        with self._lock:
            return {node: list(infos.values()) for node, infos in self._by_node.items()}

    def __len__(self) -> int:
        with self._lock:
            return len(self._infos)

    def has_reservations_on(self, node: str) -> bool:
        # One dict lookup, without the lock: asked for every pod a preemption dry run moves.
        return node in self._by_node

    def has_consumers(self) -> bool:
        """Whether any pod consumes a Reservation (and so could free resources into one)."""
        return bool(self._consumers)

    def consumed_by(self, pod_uid: str) -> ReservationInfo | None:
        """The Available Reservation ``pod_uid`` consumes (assumed or bound into it)."""
        with self._lock:
            consumer = self._consumers.get(pod_uid)
            return self._infos.get(consumer[0]) if consumer is not None else None

    def matching(self, pod: PodInfo) -> list[ReservationInfo]:
        """The matchable Reservations whose owners match ``pod``."""
        with self._lock:
            if not self._infos:
                return []
            uids = set(self._unindexed)
            for key in _pod_index_keys(pod):
                found = self._by_owner.get(key)
                if found:
                    uids |= found
            infos = [self._infos[u] for u in uids]
        return [i for i in infos if i.matchable() and match_reservation_owners(pod.pod, i.owners)]

    # Reservations ------------------------------------------------------------------------

    def update_reservation(self, r: Reservation) -> None:
        """An Available Reservation was added or changed."""
        if not is_reservation_available(r):
            self.delete_reservation(r)
            return
        uid = r.metadata.uid or ""
        with self._lock:
            old = self._infos.get(uid)
            if old is not None:
                self._unindex(old)
            assigned = {p: req for p, (ru, req) in self._consumers.items() if ru == uid}
            info = new_reservation_info(r, assigned)
            self._infos[uid] = info
            self._by_node.setdefault(info.node_name, {})[uid] = info
            for key in {_owner_index_key(o) for o in info.owners}:
                if key is None:
                    self._unindexed.add(uid)
                else:
                    self._by_owner.setdefault(key, set()).add(uid)
            adapter = self.adapter
            if adapter is not None:
                if old is None:
                    adapter.add_pod_to_cache(info.cache_pod())
                else:
                    adapter.update_pod_in_cache(old.cache_pod(), info.cache_pod())

    def delete_reservation(self, r: Reservation) -> None:
        with self._lock:
            info = self._infos.pop(r.metadata.uid or "", None)
            if info is None:
                return
            self._unindex(info)
            if self.adapter is not None:
                self.adapter.delete_pod_from_cache(info.cache_pod())

    def _unindex(self, info: ReservationInfo) -> None:
        on_node = self._by_node.get(info.node_name)
        if on_node is not None:
            on_node.pop(info.uid, None)
            if not on_node:
                del self._by_node[info.node_name]
        for key in {_owner_index_key(o) for o in info.owners}:
            if key is None:
                self._unindexed.discard(info.uid)
            else:
                uids = self._by_owner.get(key)
                if uids is not None:
                    uids.discard(info.uid)
                    if not uids:
                        del self._by_owner[key]

    # Consumers ---------------------------------------------------------------------------

    def assign(self, reservation_uid: str, pod_uid: str, requests: Mapping[str, int]) -> None:
        """``pod_uid`` consumes the Reservation (assumed at Reserve, or seen bound)."""
        with self._lock:
            prev = self._consumers.get(pod_uid)
            if prev is not None and prev[0] == reservation_uid:
                return
            if prev is not None:
                self.unassign(pod_uid)
            info = self._infos.get(reservation_uid)
            masked = info.masked(requests) if info is not None else dict(requests)
            self._consumers[pod_uid] = (reservation_uid, masked)
            if info is not None:
                old = info.cache_pod()
                info.assigned = {**info.assigned, pod_uid: masked}
                self._refresh(old, info)

    def unassign(self, pod_uid: str) -> None:
        with self._lock:
            prev = self._consumers.pop(pod_uid, None)
            if prev is None:
                return
            info = self._infos.get(prev[0])
            if info is not None and pod_uid in info.assigned:
                old = info.cache_pod()
                info.assigned = {k: v for k, v in info.assigned.items() if k != pod_uid}
                self._refresh(old, info)

    def _refresh(self, old: dict[str, Any], info: ReservationInfo) -> None:
        """The reserve pod's remainder changed: no pod in the queue fits better because of
        it (the consumer's own event moves them), so only the cache is told."""
        if self.adapter is not None:
            self.adapter.cache.update_pod(old, info.cache_pod())

    # Informer handlers -------------------------------------------------------------------

    def on_pod(self, pod: Mapping[str, Any]) -> None:
        """A pod was added or changed. Pending pods are left alone: one assumed at Reserve
        stays assigned while it is being bound."""
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        uid = (pod.get("metadata") or {}).get("uid") or ""
        reservation_uid = consumed_reservation_uid(pod)
        if reservation_uid is None:
            self.unassign(uid)
        else:
            self.assign(reservation_uid, uid, pod_requests(pod))

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        self.unassign((pod.get("metadata") or {}).get("uid") or "")


__all__ = ["ReservationCache", "ReservationInfo", "consumed_reservation_uid",
           "new_reservation_info"]
