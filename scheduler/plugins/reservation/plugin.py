"""The Reservation plugin: schedule Reservations as reserve pods, and let their owners use them.

Corresponds to upstream ``pkg/scheduler/plugins/reservation`` (``plugin.go``,
``transformer.go``, ``nominator.go``, ``scoring.go``) with the reservation event handlers of
``pkg/scheduler/frameworkext/eventhandlers/reservation_handler.go`` (scheduler.md §7).

Reserve pods (§7.1, ``pkg/util/reservation.py``): unassigned, active Reservations whose
template names one of our profiles go to the scheduling queue as fake pods and through the
ordinary cycle; this plugin's Bind writes the Reservation's status (allocatable, nodeName,
phase Available, Scheduled/Ready conditions) and a ``Scheduled`` event on it, and DefaultBinder
skips them. A failed attempt is reported on the Reservation (condition ``Scheduled=False``
reason ``Unschedulable`` with the scheduler's message, event ``FailedScheduling``) and the reserve
pod is requeued while the Reservation is still pending (``FakePodOwner``). Available
Reservations stand in the scheduler cache as reserve pods on their node, so that everyone
else sees their resources taken; a Reservation that expires, succeeds or is deleted gives
them back. Reserve pods are never preemption victims (DefaultPreemption, Coscheduling's and
ElasticQuota's preemption skip them): there is no pod to delete.

Consumers (§7.2-7.8): a pod whose owners match Available, matchable Reservations
(``cache.py``: allocate-once Reservations are matchable until their first consumer) sees, on
the nodes of those Reservations only, a copy of the NodeInfo without their reserve pods
(BeforePreFilter; ``Snapshot.override_for_cycle``), so that NodeResourcesFit and the others
count the reserved resources as free for it. Filter then requires that the pod fits the node
through one matched Reservation ``R`` (``request ≤ allocatable − (requested − R.available)``
per resource, Restricted policy also within ``R``), or through the node alone. PreScore
nominates a Reservation per node (smallest ``reservation-order``, else highest
``score_reservation``); Score gives the preferred (ordered) node 1000, other nodes the
nominated Reservation's score, normalised to 0..100 (profile weight 5000). Reserve assigns the
pod to the nominated Reservation in the cache (Unreserve takes it back), PreBind writes the
``scheduling.koordinator.sh/reservation-allocated`` annotation (with the binding). A pod that
matches no Reservation anywhere costs one index lookup: PreScore Skip, and PreFilter Skip
too unless some pod consumes a Reservation (see preemption below).

With a client and informers the plugin also runs the Reservation controller
(``controller/``: expiry, owners/allocated, allocate-once → Succeeded, GC); like
Coscheduling's PodGroup controller it starts once the informers synced, which they do only on
the scheduler that leads.

A pod with a reservation affinity (``affinity.py``) must use a Reservation: PreFilter
restricts it to the nodes of the Reservations it may use (none: "node(s) no reservations match
reservation affinity"), and Filter keeps every reason instead of falling back to the node
alone. Exact match and Reservation taints/unschedulable narrow what a pod matches.

A pod labelled ``reservation-ignored`` sees every node without reserve pods (what
Reservations hold back is free to it) and uses no Reservation.

Preemption (§7.10). Filter reads the Reservations' state from the cache, not from the node a
preemption dry run simulates, so the PreFilter extensions (``add_pod``/``remove_pod``,
called by DefaultPreemption's dry run and by the nominated-pods check on the cycle state's
clones) count per node what the removed pods free (added ones count negative): what a
victim takes of the Reservation it consumes (``cache.consumed_by``: assumed into it, or
bound with its reservation-allocated annotation) under ``preemptible_in_rrs[node][uid]``,
the rest and its pod slot under ``preemptible[node]``. Through a matched Reservation ``R``
the pod then fits when ``request ≤ allocatable − (requested − R.available − preemptible −
preemptibleInR)`` (Restricted: also within ``R`` with ``allocated − preemptibleInR``), so a
higher-priority owner preempts the lower-priority consumers of a full Reservation and
reuses what they leave; Score counts ``R``'s allocated without ``preemptibleInR``. On a
node where the pod uses no Reservation (a reserve pod, too) the pod must fit the node with
``preemptible`` only ("node(s) preemption failed due to insufficient resources"): a victim
inside a Reservation frees nothing for it, its resources go back to that Reservation. Nodes
without Reservations are left to NodeResourcesFit, which sees the simulated node exactly.

With ``enablePreemption`` the PostFilter first runs its own preemption (``preemption.py``:
DefaultPreemption's evaluator with the plugin's candidate-node arguments, pods labelled
``disable-preemptible`` spared); pods and reserve pods preempt (a reserve pod's nomination
lives in the scheduler's nominator only). Short of a nomination — and always without
``enablePreemption`` — it says why the Reservations matching the pod's owners did not take
it ("N Reservation(s) didn't match affinity rules", ..., "N Reservation(s) matched owner
total"), which ends the pod's FailedScheduling message.

As upstream, a pod only sees the nodes the scheduler samples (``percentageOfNodesToScore``):
on a large cluster its Reservation's node may be left out of a cycle; a reservation affinity
restricts the pod to its Reservations' nodes.

Not implemented yet: pre-allocation, preemption of Reservations (reserve pods are never
victims, as upstream's TODO), the Reservation a preemptor was nominated into (upstream's
``GetNominatedReservation``: a nominated pod counts outside Reservations for the others), the
BeforeFilter transformer for reserve pods nominated by preemption (which would also make
every profile filter node by node; our nominator holds reserve pods like any other),
operating-mode pods, ignored resources, the allocate-policy conflict of reserve pods (this
API has no Default policy to conflict with).
"""

from __future__ import annotations

import copy
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np

from api.errors import MalformedValueError
from api.extension.reservation import (
    ANNOTATION_EXACT_MATCH_RESERVATION_SPEC,
    ANNOTATION_RESERVATION_AFFINITY,
    ANNOTATION_RESERVATION_ALLOCATED,
    format_reservation_allocated,
    is_reservation_ignored,
)
from api.meta import format_timestamp
from api.scheduling.v1alpha1 import reservation as v1alpha1
from api.scheduling.v1alpha1.reservation import (
    REASON_RESERVATION_AVAILABLE,
    REASON_RESERVATION_SCHEDULED,
    REASON_RESERVATION_UNSCHEDULABLE,
    ReservationAllocatePolicy,
    ReservationConditionType,
    ReservationPhase,
)
from pkg.client.errors import retry_on_conflict
from pkg.client.informers import EventHandlerFuncs, FilteringEventHandler, deleted_object
from pkg.client.resources import PODS, RESERVATIONS, Resource
from pkg.events.recorder import NORMAL, WARNING
from pkg.features import default_feature_gate
from pkg.features.scheduler_features import OMIT_NODE_LABELS_FOR_RESERVATION
from pkg.util.labels import InvalidSelectorError
from pkg.util.podresources import PODS as PODS_RESOURCE
from pkg.util.reservation import (
    ANNOTATION_RESERVATION_NODE,
    REASON_RESERVATION_FAILED,
    allocatable_at_bind,
    is_reservation_available,
    is_reservation_failed,
    is_reserve_pod,
    is_unassigned_active,
    new_reserve_pod,
    reservation_name_of,
    validate_reservation,
)
from scheduler.apis.config.koord_args import ReservationArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    default_normalize_score,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import (
    ExtendedHandle,
    InformerFactory,
    PreFilterTransformer,
    SchedulerAdapter,
)
from scheduler.plugins.reservation.affinity import NO_AFFINITY, PodReservationAffinity
from scheduler.plugins.reservation.cache import ReservationCache, ReservationInfo
from scheduler.plugins.reservation.controller import ReservationController
from scheduler.plugins.reservation.preemption import ReservationPreemption
from scheduler.schedule_one import truncate_note

log = logging.getLogger(__name__)

NAME = "Reservation"
STATE_KEY = NAME + "/state"

# The preferred node's score before normalisation (§7.7).
MOST_PREFERRED_SCORE = 1000
ERR_REASON_RESERVATION_NODE = "node(s) didn't match the nodeName specified by reservation"
ERR_REASON_NO_RESERVATIONS_MEET = "node(s) no reservation(s) to meet the requirements"
ERR_REASON_AFFINITY = "node(s) no reservations match reservation affinity"
ERR_REASON_NOT_FOUND = "reservation not found"
ERR_REASON_PREEMPTION_FAILED = "node(s) preemption failed due to insufficient resources"


def reservation_reason(reason: str) -> str:
    """A reason about the Reservations (upstream ``NewReservationReason``)."""
    return "Reservation(s) " + reason


class ReservationClient(Protocol):
    """What the plugin (and the controller it runs) uses of ``pkg.client.rest.Client``."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...

    def update_status(self, resource: Resource, obj: Any, namespace: str | None = None
                      ) -> Any: ...

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              *, patch_type: str = "merge", subresource: str | None = None) -> Any: ...

    def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...


@dataclass(slots=True)
class NodeReservations:
    """A node with Reservations the pod matches."""

    node_info: NodeInfo  # as the cache has it: the matched reserve pods still on it
    matched: list[ReservationInfo]


@dataclass(slots=True)
class ReservationState:
    """What one cycle knows of the pod's Reservations. Shared by the clones preemption makes
    (simulations add or remove other pods, never Reservations)."""

    reserve_pod: bool = False
    ignored: bool = False  # the pod is labelled reservation-ignored
    affinity: PodReservationAffinity = NO_AFFINITY
    nodes: dict[str, NodeReservations] = field(default_factory=dict)
    # Node → the Reservation nominated there (None: the pod uses the node alone).
    nominated: dict[str, ReservationInfo | None] = field(default_factory=dict)
    preferred_node: str = ""
    assumed: ReservationInfo | None = None
    patched: bool = False  # PreBind patched the annotation (not left to the binding)
    # For PostFilter: Reservations whose owners match the pod, and why the pod may not use
    # some of them (reason → count).
    owner_matched: int = 0
    unusable: dict[str, int] = field(default_factory=dict)
    # What the pods a simulation removed free (added pods count negative), per node: outside
    # any Reservation (with their pod slots under "pods"), and inside each Reservation by uid
    # (its resources only; "pods" when it reserves pods). Only on the clones that preemption
    # dry runs and nominated-pod checks make; empty in the cycle's own state.
    preemptible: dict[str, dict[str, int]] = field(default_factory=dict)
    preemptible_in_rrs: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def clone(self) -> ReservationState:
        c = copy.copy(self)
        c.preemptible = {node: dict(freed) for node, freed in self.preemptible.items()}
        c.preemptible_in_rrs = {node: {uid: dict(freed) for uid, freed in rrs.items()}
                                for node, rrs in self.preemptible_in_rrs.items()}
        return c

    def freed(self, node: str) -> dict[str, int] | None:
        """What simulated removals freed on ``node`` outside Reservations; None when the
        simulation changed nothing there (every change counts a pod slot here)."""
        return self.preemptible.get(node)

    def freed_in(self, node: str, r: ReservationInfo) -> dict[str, int] | None:
        rrs = self.preemptible_in_rrs.get(node)
        return rrs.get(r.uid) if rrs is not None else None


# The caches of the scheduler each Snapshot belongs to: its profiles share one.
_CACHES: weakref.WeakKeyDictionary[Snapshot, ReservationCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def shared_cache(snapshot: Snapshot) -> ReservationCache:
    with _CACHES_LOCK:
        cache = _CACHES.get(snapshot)
        if cache is None:
            cache = _CACHES[snapshot] = ReservationCache()
        return cache


# Fit arithmetic (§7.6) --------------------------------------------------------------------


def fits_node(requests: Mapping[str, int], node_info: NodeInfo, remained: Mapping[str, int],
              uncounted: int) -> list[str]:
    """The resources the pod lacks on the node when it may also use ``remained`` (what is left
    of one Reservation, what preemption victims free): ``request ≤ allocatable − (requested −
    remained)``. ``node_info`` still counts every Reservation's remainder and every consumer;
    ``uncounted`` of its pods do not count (the matched reserve pods, victims)."""
    insufficient = []
    if len(node_info.pods) - uncounted + 1 > node_info.allowed_pod_number:
        insufficient.append(PODS_RESOURCE)
    allocatable, requested = node_info.allocatable, node_info.requested
    for name, request in requests.items():
        if request <= 0 or name == PODS_RESOURCE:
            continue
        free = allocatable.get(name, 0) - (requested.get(name, 0) - remained.get(name, 0))
        if request > free:
            insufficient.append(name)
    return insufficient


def fits_reservation(requests: Mapping[str, int], r: ReservationInfo,
                     freed: Mapping[str, int] | None = None) -> list[str]:
    """Restricted policy: the pod's requests of the Reservation's resources fit in what is
    left of it, with what preemption victims inside it ``freed`` given back."""
    reasons = []
    allocated = r.allocated
    freed = freed or {}
    max_pods = r.allocatable.get(PODS_RESOURCE)
    if max_pods is not None and len(r.assigned) - freed.get(PODS_RESOURCE, 0) + 1 > max_pods:
        reasons.append(reservation_reason("Too many pods"))
    for name, capacity in r.allocatable.items():
        request = requests.get(name, 0)
        if name == PODS_RESOURCE or request <= 0:
            continue
        if request > capacity - max(0, allocated.get(name, 0) - freed.get(name, 0)):
            reasons.append(reservation_reason("Insufficient " + name))
    return reasons


def score_reservation(requests: Mapping[str, int], r: ReservationInfo,
                      freed: Mapping[str, int] | None = None) -> int:
    """How full the pod would make the Reservation, 0..100 (``ScoreReservation``): per
    resource of its allocatable, ``100 × (request + allocated) / capacity`` when that fits,
    else 0; averaged. ``allocated`` leaves out what preemption victims inside it ``freed``."""
    allocated = r.allocated
    if freed:
        allocated = {k: max(0, v - freed.get(k, 0)) for k, v in allocated.items()}
    capacities = {k: v for k, v in r.allocatable.items() if v > 0}
    if not capacities:
        return 0
    total = 0
    for name, capacity in capacities.items():
        requested = requests.get(name, 0) + allocated.get(name, 0)
        if requested <= capacity:
            total += MAX_NODE_SCORE * requested // capacity
    return total // len(capacities)


class Reservation(PreFilterTransformer, PreFilterPlugin, FilterPlugin, PostFilterPlugin,
                  PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin, BindPlugin):
    name = NAME
    has_normalize = True
    # Only reserve pods are bound here (other pods are skipped to DefaultBinder, whose
    # binding carries PreBind's annotations).
    carries_annotations = True

    def __init__(self, args: ReservationArgs | None, handle: ExtendedHandle) -> None:
        args = args if args is not None else ReservationArgs()
        errors = args.validate_args()
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        super().__init__(args, handle)
        self.args = args
        self.feature_gate = default_feature_gate
        self.cache = shared_cache(handle.snapshot)
        self.preemption = (ReservationPreemption(args, handle) if args.enable_preemption
                           else None)
        # The handle's client is pkg's Client: it reads and writes Reservations too.
        self.client = cast(ReservationClient | None, handle.client)
        factory = handle.informer_factory
        self._reservations = (factory.informer_for(RESERVATIONS) if factory is not None
                              else None)
        self.controller: ReservationController | None = None
        # One controller per scheduler, however many profiles run the plugin.
        if factory is not None and self.client is not None and self.cache.claim_controller():
            self.controller = ReservationController(self.client, factory, args, handle.clock,
                                                    handle.metrics)
            # Its workers start once the informers synced, which they do only once the
            # scheduler runs them (after winning leader election).
            threading.Thread(target=self.controller.start, name="reservation-controller-start",
                             daemon=True).start()

    # Feeding the scheduler (SchedulerEventSource) ----------------------------------------

    def register_scheduler_handlers(self, adapter: SchedulerAdapter,
                                    informer_factory: InformerFactory) -> list[object]:
        """Pending Reservations to the queue as reserve pods, Available ones to the cache
        (through ``self.cache``, which also follows their consumers)."""
        self.cache.adapter = adapter
        reservations = informer_factory.informer_for(RESERVATIONS)
        pods = informer_factory.informer_for(PODS, typed=False)

        def pending(obj: Any) -> bool:
            return (isinstance(obj, v1alpha1.Reservation) and is_unassigned_active(obj)
                    and adapter.responsible_for(new_reserve_pod(obj)))

        def available(obj: Any) -> bool:
            return isinstance(obj, v1alpha1.Reservation) and is_reservation_available(obj)

        return [
            reservations.add_event_handler(FilteringEventHandler(pending, EventHandlerFuncs(
                add=lambda r: adapter.add_pod_to_queue(new_reserve_pod(r)),
                update=lambda old, new: adapter.update_pod_in_queue(new_reserve_pod(old),
                                                                    new_reserve_pod(new)),
                delete=lambda obj: adapter.delete_pod_from_queue(
                    new_reserve_pod(deleted_object(obj)))))),
            reservations.add_event_handler(FilteringEventHandler(available, EventHandlerFuncs(
                add=self.cache.update_reservation,
                update=lambda _, new: self.cache.update_reservation(new),
                delete=lambda obj: self.cache.delete_reservation(deleted_object(obj))))),
            pods.add_event_handler(EventHandlerFuncs(
                add=self.cache.on_pod, update=lambda _, new: self.cache.on_pod(new),
                delete=lambda obj: self.cache.on_pod_delete(deleted_object(obj)))),
        ]

    # Reserve pods in the scheduler (FakePodOwner) ----------------------------------------

    def owns(self, pod: PodInfo) -> bool:
        return is_reserve_pod(pod.pod)

    def _reservation(self, pod: PodInfo) -> v1alpha1.Reservation | None:
        """The Reservation of a reserve pod, as the informer has it (None when gone or when
        a new one took its name)."""
        if self._reservations is None:
            return None
        r = self._reservations.lister.get(reservation_name_of(pod.pod))
        if not isinstance(r, v1alpha1.Reservation) or r.metadata.uid != pod.uid:
            return None
        return r

    def still_pending(self, pod: PodInfo) -> bool:
        if self._reservations is None:
            return True
        r = self._reservation(pod)
        return r is not None and is_unassigned_active(r)

    def report_failure(self, pod: PodInfo, reason: str, message: str) -> None:
        r = self._reservation(pod)
        if r is None:
            return
        recorder = self.handle.recorder
        if recorder is not None:
            recorder.eventf(r, None, WARNING, "FailedScheduling", "Scheduling",
                            truncate_note(message))
        if self.client is None:
            return
        condition = {"type": ReservationConditionType.SCHEDULED.value, "status": "False",
                     "reason": REASON_RESERVATION_UNSCHEDULABLE, "message": message}
        # Said already (as the informer has it): no API call for a repeated failure.
        if any((c.type, c.status, c.reason, c.message) == tuple(condition.values())
               for c in (r.status.conditions if r.status else None) or ()):
            return
        try:
            self._update_status(r.metadata.name or "", lambda obj: _set_condition(
                obj, condition, format_timestamp(self.handle.clock.now())))
        except Exception as err:  # noqa: BLE001 - the next failed attempt writes it again
            log.warning("Updating the Scheduled condition of Reservation %s failed: %s",
                        r.metadata.name, err)

    def _update_status(self, name: str, mutate: Any) -> dict[str, Any] | None:
        """Read the Reservation, ``mutate(obj)`` (False: nothing to write) and write its
        status, again from a fresh read when the write met a conflict."""
        client = self.client
        assert client is not None

        def write() -> dict[str, Any]:
            obj: dict[str, Any] = client.get(RESERVATIONS, name)
            if mutate(obj) is False:
                return obj
            updated: dict[str, Any] = client.update_status(RESERVATIONS, obj)
            return updated
        return retry_on_conflict(write)

    # BeforePreFilter: restore the matched Reservations (§7.4) ----------------------------

    def before_pre_filter(self, state: CycleState,
                          pod: PodInfo) -> tuple[PodInfo, Status | None]:
        if is_reserve_pod(pod.pod):
            state.write(STATE_KEY, ReservationState(reserve_pod=True))
            return pod, None
        s = ReservationState()
        state.write(STATE_KEY, s)
        snapshot = self.handle.snapshot
        if is_reservation_ignored(pod.pod):
            # The pod ignores Reservations: what they hold back is free to it (rare pods, so
            # every node with Reservations is restored).
            s.ignored = True
            for node, infos in self.cache.by_node().items():
                ni = snapshot.get(node)
                if ni is not None:
                    _restore(snapshot, ni, infos)
            return pod, None
        annotations = pod.annotations
        if (ANNOTATION_RESERVATION_AFFINITY in annotations
                or ANNOTATION_EXACT_MATCH_RESERVATION_SPEC in annotations):
            try:
                s.affinity = PodReservationAffinity.of(pod)
            except (MalformedValueError, InvalidSelectorError, ValueError) as err:
                return pod, unresolvable(str(err))
        if not len(self.cache):
            return pod, None
        omit_node_labels = (s.affinity.affinity is not None
                            and self.feature_gate.enabled(OMIT_NODE_LABELS_FOR_RESERVATION))
        for r in self.cache.matching(pod):
            ns = s.nodes.get(r.node_name)
            ni = ns.node_info if ns is not None else snapshot.get(r.node_name)
            if ni is None:
                continue
            s.owner_matched += 1
            why = s.affinity.mismatch(r, {} if omit_node_labels else ni.labels)
            if why is not None:
                s.unusable[why] = s.unusable.get(why, 0) + 1
                continue
            if ns is None:
                ns = s.nodes[r.node_name] = NodeReservations(ni, [])
            ns.matched.append(r)
        for ns in s.nodes.values():
            _restore(snapshot, ns.node_info, ns.matched)
        return pod, None

    # PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        s = _state(state)
        if s.reserve_pod:
            if self._reservations is None:
                return None, None
            r = self._reservation(pod)
            if r is None:
                return None, Status(Code.ERROR, ERR_REASON_NOT_FOUND)
            invalid = validate_reservation(r)
            if invalid is not None:
                return None, Status(Code.ERROR, invalid)
            return None, None
        if s.affinity.required:
            if not s.nodes:
                return None, unresolvable(ERR_REASON_AFFINITY)
            return PreFilterResult(set(s.nodes)), None
        if not s.nodes and not self.cache.has_consumers():
            # Filter would have nothing to say, even in a preemption dry run (no victim can
            # free resources into a Reservation).
            return None, Status(Code.SKIP)
        return None, None

    def pre_filter_extensions(self) -> Reservation:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        self._simulate(state, pod_to_add, node_info.name, -1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        self._simulate(state, pod_to_remove, node_info.name, 1)
        return None

    def _simulate(self, state: CycleState, other: PodInfo, node: str, sign: int) -> None:
        """Count what ``other`` frees (``sign`` 1: removed, a victim) or takes (-1: added, a
        nominated pod or a reprieved victim) on ``node``: inside the Reservation it consumes
        there, what it takes of that Reservation; the rest, and its pod slot, outside. Nodes
        without Reservations need nothing: NodeResourcesFit sees the simulated node as it
        would be."""
        s = state.get(STATE_KEY)
        if not isinstance(s, ReservationState) or s.ignored \
                or not self.cache.has_reservations_on(node):
            return
        requests = other.requests
        outside = s.preemptible.setdefault(node, {})
        r = self.cache.consumed_by(other.uid)
        if r is not None and r.node_name == node:
            inside = s.preemptible_in_rrs.setdefault(node, {}).setdefault(r.uid, {})
            for name, v in requests.items():
                freed = inside if name in r.allocatable else outside
                freed[name] = freed.get(name, 0) + sign * v
            if PODS_RESOURCE in r.allocatable:
                inside[PODS_RESOURCE] = inside.get(PODS_RESOURCE, 0) + sign
        else:
            for name, v in requests.items():
                outside[name] = outside.get(name, 0) + sign * v
        outside[PODS_RESOURCE] = outside.get(PODS_RESOURCE, 0) + sign

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = _state(state)
        if s.reserve_pod:
            node = pod.annotations.get(ANNOTATION_RESERVATION_NODE)
            if node and node != node_info.name:
                return unresolvable(ERR_REASON_RESERVATION_NODE)
            return self._fits_after_preemption(s, pod, node_info.name)
        ns = s.nodes.get(node_info.name)
        if ns is None:
            if s.affinity.required:
                return unresolvable(ERR_REASON_AFFINITY)
            return self._fits_after_preemption(s, pod, node_info.name)
        return self._filter_with_reservations(pod, s, ns)

    def _fits_after_preemption(self, s: ReservationState, pod: PodInfo,
                               node: str) -> Status | None:
        """On a node where the pod uses no Reservation, in a simulation that removed pods:
        what victims inside Reservations free goes back to those Reservations, not to the
        pod (NodeResourcesFit, on the simulated node, counts it free)."""
        freed = s.freed(node)
        if freed is None:
            return None
        ni = self.handle.snapshot.get(node)  # the node before the simulation
        if ni is not None and fits_node(pod.requests, ni, freed, freed.get(PODS_RESOURCE, 0)):
            return unschedulable(ERR_REASON_PREEMPTION_FAILED)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        s = _state(state)
        if s.reserve_pod:
            node = pod.annotations.get(ANNOTATION_RESERVATION_NODE)
            if not node:
                return None
            return np.asarray(snapshot.names == node, dtype=bool)
        if s.affinity.required:
            mask = np.zeros(len(snapshot), dtype=bool)
            for name, ns in s.nodes.items():
                mask[snapshot.index[name]] = self._filter_with_reservations(pod, s, ns) is None
            return mask
        failed: np.ndarray | None = None
        for name, ns in s.nodes.items():
            if self._filter_with_reservations(pod, s, ns) is not None:
                if failed is None:
                    failed = np.ones(len(snapshot), dtype=bool)
                failed[snapshot.index[name]] = False
        return failed

    def _fitting(self, s: ReservationState, pod: PodInfo, ns: NodeReservations,
                 r: ReservationInfo) -> tuple[list[str], list[str]]:
        """(resources the node lacks, reasons about ``r``) for the pod using ``r``; in a
        simulation, with what victims outside Reservations and inside ``r`` free."""
        node = r.node_name
        freed, freed_in_r = s.freed(node), s.freed_in(node, r)
        remained: Mapping[str, int] = r.available
        uncounted = len(ns.matched)
        if freed is not None:
            remained = _sum(remained, freed, freed_in_r)
            uncounted += freed.get(PODS_RESOURCE, 0)
        by_node = fits_node(pod.requests, ns.node_info, remained, uncounted)
        by_reservation = (fits_reservation(pod.requests, r, freed_in_r)
                          if r.allocate_policy == ReservationAllocatePolicy.RESTRICTED else [])
        return by_node, by_reservation

    def _usable(self, pod: PodInfo, affinity: PodReservationAffinity,
                ns: NodeReservations) -> list[ReservationInfo]:
        """The matched Reservations worth trying: only the named one, if the pod names one;
        without affinity, none that shares no resource with the pod (of no use to it)."""
        if affinity.name:
            return [r for r in ns.matched if r.name == affinity.name]
        if affinity.required:
            return ns.matched
        return [r for r in ns.matched if any(name in r.allocatable for name in pod.requests)]

    def _filter_with_reservations(self, pod: PodInfo, s: ReservationState,
                                  ns: NodeReservations) -> Status | None:
        affinity = s.affinity
        by_node: set[str] = set()
        by_reservation: list[str] = []
        for r in self._usable(pod, affinity, ns):
            node_lacks, reasons = self._fitting(s, pod, ns, r)
            if not node_lacks and not reasons:
                return None
            by_node.update(node_lacks)
            by_reservation.extend(reasons)
        node_reasons = [f"Insufficient {name} by node" for name in sorted(by_node)]
        if affinity.required:
            # The pod must use a Reservation: every reason counts.
            return unschedulable(*(node_reasons + by_reservation
                                   or [ERR_REASON_NO_RESERVATIONS_MEET]))
        if not by_node:
            # Through no Reservation: the pod may still fit the node alone.
            freed = s.freed(ns.node_info.name) or {}
            node_reasons = [f"Insufficient {name} by node" for name in fits_node(
                pod.requests, ns.node_info, freed,
                len(ns.matched) + freed.get(PODS_RESOURCE, 0))]
            if not node_reasons:
                return None
        return unschedulable(*node_reasons)

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        """With ``enablePreemption``, preempt (``preemption.py``) first; whatever it found
        short of a nomination, say why the Reservations whose owners match the pod did not
        take it, for the pod's FailedScheduling message."""
        result: PostFilterResult | None = None
        reasons: list[str] = []
        if self.preemption is not None:
            result, status = self.preemption.post_filter(state, pod, statuses)
            if status is None or status.code != Code.UNSCHEDULABLE:
                return result, status
            reasons.extend(status.reasons)
        s = _state(state)
        if not s.reserve_pod and (s.owner_matched or s.affinity.required):
            reasons.extend(reservation_diagnosis(s, statuses))
        return result, Status(Code.UNSCHEDULABLE, *reasons)

    # Nomination, PreScore, Score (§7.7) --------------------------------------------------

    def nominate(self, s: ReservationState, pod: PodInfo, node: str) -> ReservationInfo | None:
        """The Reservation the pod would use on ``node``; None to use the node alone."""
        if node in s.nominated:
            return s.nominated[node]
        ns = s.nodes.get(node)
        chosen: ReservationInfo | None = None
        if ns is not None:
            candidates = [r for r in self._usable(pod, s.affinity, ns) if r.matchable()
                          and self._fitting(s, pod, ns, r) == ([], [])]
            if len(candidates) == 1:
                chosen = candidates[0]
            elif candidates:
                ordered = [r for r in candidates if r.order > 0]
                if ordered:
                    chosen = min(ordered, key=lambda r: r.order)
                else:
                    chosen = max(candidates, key=lambda r: score_reservation(
                        pod.requests, r, s.freed_in(node, r)))
        s.nominated[node] = chosen
        return chosen

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        s = _state(state)
        if s.reserve_pod or not s.nodes:
            return Status(Code.SKIP)
        # The preferred node must be feasible: with one matched node, an infeasible one is
        # simply never scored.
        feasible = _names(nodes) if len(s.nodes) > 1 else None
        best = 0
        for node in s.nodes:
            if feasible is not None and node not in feasible:
                continue
            r = self.nominate(s, pod, node)
            if r is not None and r.order > 0 and (best == 0 or r.order < best):
                best, s.preferred_node = r.order, node
        return None

    def _score_of(self, s: ReservationState, pod: PodInfo, node: str) -> int:
        if node == s.preferred_node:
            return MOST_PREFERRED_SCORE
        r = s.nominated.get(node)
        return 0 if r is None else score_reservation(pod.requests, r, s.freed_in(node, r))

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        s = _state(state)
        if s.reserve_pod:
            return 0, None
        return self._score_of(s, pod, node_info.name), None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        out = np.zeros(len(idx), dtype=np.int64)
        s = _state(state)
        if s.reserve_pod or not s.nominated:
            return out, None
        position = {int(i): j for j, i in enumerate(idx.tolist())}
        for node in s.nominated:
            j = position.get(snapshot.index.get(node, -1))
            if j is not None:
                out[j] = self._score_of(s, pod, node)
        return out, None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    # Reserve / Unreserve / PreBind / Bind (§7.8) -----------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, ReservationState) or s.reserve_pod:
            return None
        if not s.nodes:
            return unschedulable(ERR_REASON_AFFINITY) if s.affinity.required else None
        # Nominated at PreScore, or now when only one node was feasible (no scoring).
        r = self.nominate(s, pod, node_name)
        if r is None or not r.matchable():
            return unschedulable(ERR_REASON_AFFINITY) if s.affinity.required else None
        self.cache.assign(r.uid, pod.uid, pod.requests)
        s.assumed = r
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, ReservationState) or s.assumed is None:
            return
        self.cache.unassign(pod.uid)
        s.assumed = None
        if s.patched and self.client is not None:
            # PreBind patched the annotation, but the pod was not bound: take it back.
            s.patched = False
            try:
                self.client.patch(PODS, pod.name, {"metadata": {"annotations": {
                    ANNOTATION_RESERVATION_ALLOCATED: None}}}, pod.namespace)
            except Exception as err:  # noqa: BLE001 - the pod may be gone
                log.warning("Removing the reservation-allocated annotation of %s failed: %s",
                            pod.key, err)

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, ReservationState) or s.assumed is None:
            return None
        annotations = {ANNOTATION_RESERVATION_ALLOCATED: format_reservation_allocated(
            s.assumed.name, s.assumed.uid)}
        if self.handle.defer_to_binding(state, annotations):
            return None
        if self.client is None:
            return Status(Code.ERROR, "the scheduler has no client")
        try:
            self.client.patch(PODS, pod.name, {"metadata": {"annotations": annotations}},
                              pod.namespace)
        except Exception as err:  # noqa: BLE001 - reported as the PreBind error
            return Status.as_error(err)
        s.patched = True
        return None

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Reserve pods only: the Reservation becomes Available on ``node_name``."""
        if not is_reserve_pod(pod.pod):
            return Status(Code.SKIP)
        if self.client is None:
            return Status(Code.ERROR, "the scheduler has no client")
        name = reservation_name_of(pod.pod)
        now = format_timestamp(self.handle.clock.now())

        def make_available(obj: dict[str, Any]) -> None:
            r = v1alpha1.Reservation.model_validate(obj)
            if is_reservation_failed(r) or r.metadata.uid != pod.uid:
                raise _NotActive()
            status = obj.setdefault("status", {})
            status["allocatable"] = allocatable_at_bind(r)
            status["nodeName"] = node_name
            status["phase"] = ReservationPhase.AVAILABLE.value
            status["conditions"] = [
                {"type": ReservationConditionType.SCHEDULED.value, "status": "True",
                 "reason": REASON_RESERVATION_SCHEDULED, "lastProbeTime": now,
                 "lastTransitionTime": now},
                {"type": ReservationConditionType.READY.value, "status": "True",
                 "reason": REASON_RESERVATION_AVAILABLE, "lastProbeTime": now,
                 "lastTransitionTime": now}]

        try:
            updated = self._update_status(name, make_available)
        except _NotActive:
            return Status(Code.ERROR, REASON_RESERVATION_FAILED)
        except Exception as err:  # noqa: BLE001 - any failure fails this binding cycle
            return Status.as_error(err)
        recorder = self.handle.recorder
        if recorder is not None and updated is not None:
            recorder.eventf(updated, None, NORMAL, "Scheduled", "Binding",
                            "Successfully assigned %s to %s", name, node_name)
        return None


class _NotActive(Exception):
    """The Reservation failed (or was replaced) before its reserve pod was bound."""


def reservation_diagnosis(s: ReservationState, statuses: NodeToStatus) -> list[str]:
    """Upstream's PostFilter reasons: why matched Reservations were unusable, the nodes'
    reasons counted per Reservation there, and how many matched the pod's owners."""
    reasons = [f"{n} Reservation(s) {why}" for why, n in s.unusable.items()]
    by_node: dict[str, int] = {}
    for name, ns in s.nodes.items():
        status = statuses.get(name)
        for reason in status.reasons if status is not None else ():
            by_node[reason] = by_node.get(reason, 0) + len(ns.matched)
    reasons.extend(f"{n} Reservation(s) for node reason that {reason}"
                   for reason, n in by_node.items())
    reasons.append(f"{s.owner_matched} Reservation(s) matched owner total")
    return reasons


def _restore(snapshot: Snapshot, node_info: NodeInfo,
             reservations: Iterable[ReservationInfo]) -> None:
    """Show this cycle's pod the node without the Reservations' reserve pods."""
    restored = node_info.clone()
    for r in reservations:
        restored.remove_pod(r.key)
    snapshot.override_for_cycle(restored)


def _sum(*parts: Mapping[str, int] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for name, v in (part or {}).items():
            out[name] = out.get(name, 0) + v
    return out


def _state(state: CycleState) -> ReservationState:
    s = state.get(STATE_KEY)
    return s if isinstance(s, ReservationState) else ReservationState()


def _names(nodes: Iterable[NodeInfo]) -> set[str]:
    return {n.name for n in nodes}


def _set_condition(obj: dict[str, Any], condition: dict[str, Any], now: str) -> bool:
    """Put ``condition`` among the Reservation's conditions (same type replaced); False when
    it is there already with the same status, reason and message."""
    status = obj.setdefault("status", {})
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    for i, c in enumerate(conditions):
        if c.get("type") == condition["type"]:
            if all(c.get(k) == condition[k] for k in ("status", "reason", "message")):
                return False
            transition = c.get("lastTransitionTime") if c.get("status") == \
                condition["status"] else now
            conditions[i] = {**condition, "lastProbeTime": now,
                             "lastTransitionTime": transition or now}
            status["conditions"] = conditions
            return True
    conditions.append({**condition, "lastProbeTime": now, "lastTransitionTime": now})
    status["conditions"] = conditions
    return True


__all__ = ["MOST_PREFERRED_SCORE", "NAME", "Reservation", "ReservationState", "fits_node",
           "fits_reservation", "reservation_reason", "score_reservation", "shared_cache"]
