"""The scheduling queue: activeQ, backoffQ and unschedulablePods.

Corresponds to kube-scheduler ``pkg/scheduler/backend/queue`` (``PriorityQueue`` with its
``activeQueue``, ``backoffQueue`` and ``unschedulablePods``, in ``scheduling_queue.go``),
v1.35. The queue owns the pod nominator (``nominator.py``) and keeps it current as pods come
and go. Behaviour:

* **activeQ** is a heap in QueueSort order (``less``); ``pop`` takes its head, blocking while
  it is empty, and counts the attempt and the scheduling cycle.
* **backoffQ** is a heap by backoff expiry: the last attempt's timestamp plus
  ``min(initial × 2^(attempts-1), max)``; ``flush_backoff_completed`` (every second under
  ``run``) moves expired pods to activeQ.
* **unschedulablePods** holds pods some plugin rejected. A cluster event moves such a pod
  only when one of its rejecting plugins registered a matching event whose queueing hint (if
  any) says QUEUE; a rejection by a Pending plugin then skips the backoff. Pods left there
  longer than ``pod_max_in_unschedulable_duration`` are moved by
  ``flush_unschedulable_left_over`` (every 30 s under ``run``).
* PreEnqueue runs whenever a pod is about to enter activeQ; a rejected pod is *gated*: it
  waits in unschedulablePods until an update of the pod, or an event registered by the gating
  plugin, lets PreEnqueue pass.

Failure routing is upstream's rule without SchedulerQueueingHints' in-flight event log: a pod
whose attempt failed goes to backoffQ when a move request arrived since its cycle began
(``moveRequestCycle >= podSchedulingCycle``) or when nothing rejected it (an error), else to
unschedulablePods. Updates and deletions of a pod while it is being scheduled are remembered
instead of re-adding it: a deleted pod is dropped when it comes back, an updated one comes back
as its newest version (to backoffQ when its spec changed). SchedulerPopFromBackoffQ (pop from
backoffQ while activeQ is empty) is not implemented.

Every method is thread-safe: the scheduling loop pops while informer threads add, update,
delete and move. Hot paths (add, pop, done) are O(log n) with ``heapq``; entries removed from
the middle of a heap are dropped lazily when they surface.

Queueing hints come per profile, as ``Framework.events_to_register()`` returns them:
``{profile: {plugin: [ClusterEventWithHint, ...]}}``; a pod's profile is its
``spec.schedulerName``. Upstream's framework registers every rejecting plugin that lacks
EnqueueExtensions for all events; such plugins must appear here with ``[WILDCARD]`` hints.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    BACKOFF_COMPLETE,
    FORCE_ACTIVATE,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    ClusterEvent,
    ClusterEventWithHint,
    HintFn,
    QueueingHint,
    pod_update_events,
)
from scheduler.framework.nominator import Nominator, nominated_node_name
from scheduler.framework.types import PodInfo, pod_key, pod_uid

if TYPE_CHECKING:
    from scheduler.metrics.metrics import SchedulerMetrics

log = logging.getLogger(__name__)

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_DURATION = 300.0
BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
DEFAULT_PROFILE = "default-scheduler"

# Queue names (the ``queue`` label of the pending and incoming pod metrics).
ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"

# Pods entering the queue through these may carry status.nominatedNodeName.
_NOMINATING_EVENTS = frozenset({UNSCHEDULED_POD_ADD.label, UNSCHEDULED_POD_UPDATE.label})

# How a moved pod is requeued (upstream queueingStrategy).
_SKIP = 0
_AFTER_BACKOFF = 1
_IMMEDIATELY = 2


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the queue and its queueing history.

    ``timestamp`` is when it (re-)entered the queue and ``initial_attempt_timestamp`` when it
    first entered activeQ, both on the queue clock's monotonic time. ``attempts`` counts pops.
    The scheduler sets ``unschedulable_plugins`` / ``pending_plugins`` to the plugins that
    rejected the attempt before handing the pod back; both empty means an error.
    ``pod_info`` is the parsed ``pod``, rebuilt when the pod is updated.
    """

    pod: dict[str, Any]
    key: str
    uid: str
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    gating_plugin: str | None = None
    pod_info: PodInfo = field(init=False)

    def __post_init__(self) -> None:
        self.pod_info = PodInfo(self.pod)


LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
# Runs the PreEnqueue plugins on a pod's ``pod_info``: (passed, name of the rejecting plugin).
PreEnqueueFn = Callable[[PodInfo], tuple[bool, str | None]]
# Asked before each pop (frameworkext's NextPod): the key of the pod to schedule next, if any.
NextPodFn = Callable[[], str | None]
# profile → plugin → the events it registered.
EventsToRegister = Mapping[str, Mapping[str, Iterable[ClusterEventWithHint]]]
PreCheck = Callable[[dict[str, Any]], bool]


class _ActiveEntry:
    """activeQ heap entry; each queue subclasses it with ``__lt__`` calling its ``less``."""

    __slots__ = ("qpi",)

    def __init__(self, qpi: QueuedPodInfo) -> None:
        self.qpi = qpi

    def __lt__(self, other: _ActiveEntry) -> bool:
        raise NotImplementedError


def _active_entry_type(less: LessFn) -> type[_ActiveEntry]:
    class Entry(_ActiveEntry):
        __slots__ = ()

        def __lt__(self, other: _ActiveEntry) -> bool:
            return less(self.qpi, other.qpi)

    return Entry


# backoffQ heap entry: (expiry, sequence, pod). The sequence breaks ties, so pods are never
# compared and the comparisons stay in C.
_BackoffEntry = tuple[float, int, QueuedPodInfo]


@dataclass(slots=True)
class _Matched:
    """What an incoming event means to the registrations (cached per event)."""

    interested: bool
    wildcard: bool
    # profile → (plugin, hint) of the registrations matching the event.
    hints: dict[str, list[tuple[str, HintFn | None]]]
    # Plugins with a matching registration (gated pods move only for their gating plugin's).
    plugins: frozenset[str]


def _profile(pod: Mapping[str, Any]) -> str:
    return (pod.get("spec") or {}).get("schedulerName") or DEFAULT_PROFILE


# Metadata that changes without changing what the pod asks for (upstream isPodUpdated).
_VOLATILE_META = frozenset({"resourceVersion", "generation", "managedFields", "finalizers"})
# Status fields that do matter for scheduling (DRA claims).
_RELEVANT_STATUS = ("resourceClaimStatuses", "extendedResourceClaimStatus")


def is_pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether an update may have made the pod schedulable: anything but status and
    bookkeeping metadata changed."""
    for k in old.keys() | new.keys():
        a, b = old.get(k), new.get(k)
        if k == "status":
            a, b = a or {}, b or {}
            if any(a.get(f) != b.get(f) for f in _RELEVANT_STATUS):
                return True
        elif k == "metadata":
            a, b = a or {}, b or {}
            if any(a.get(f) != b.get(f) for f in a.keys() | b.keys() if f not in _VOLATILE_META):
                return True
        elif a != b:
            return True
    return False


class SchedulingQueue:
    """kube-scheduler's PriorityQueue (see the module docstring)."""

    def __init__(self, less: LessFn, *, pre_enqueue: PreEnqueueFn | None = None,
                 events_to_register: EventsToRegister | None = None,
                 clock: Clock = REAL_CLOCK,
                 pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
                 pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
                 pod_max_in_unschedulable_duration: float =
                 DEFAULT_POD_MAX_IN_UNSCHEDULABLE_DURATION,
                 metrics: SchedulerMetrics | None = None,
                 next_pod: NextPodFn | None = None) -> None:
        self._entry = _active_entry_type(less)
        self._pre_enqueue = pre_enqueue
        self._next_pod = next_pod
        self._clock = clock
        self._initial_backoff = pod_initial_backoff
        self._max_backoff = pod_max_backoff
        self._max_in_unschedulable = pod_max_in_unschedulable_duration
        self._metrics = metrics
        # An RLock: PreEnqueue plugins and hints run under it and may read the nominator.
        # Taken directly (a C call) except to wait or notify through the condition.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._active_heap: list[_ActiveEntry] = []
        self._active: dict[str, _ActiveEntry] = {}  # key → live entry
        self._backoff_heap: list[_BackoffEntry] = []
        self._backoff: dict[str, _BackoffEntry] = {}  # key → live entry
        self._seq = itertools.count()
        self._unsched: dict[str, QueuedPodInfo] = {}
        self._num_gated = 0
        # Popped and not yet done, by uid; and what happened to them meanwhile.
        self._in_flight: dict[str, QueuedPodInfo] = {}
        self._in_flight_updates: dict[str, dict[str, Any]] = {}
        self._in_flight_deleted: set[str] = set()
        self._cycle = 0
        self._move_request_cycle = -1
        self._closed = False
        self._stop = threading.Event()
        self.nominator = Nominator(self._lock, self._holds)
        # profile → registered event → [(plugin, hint)].
        self._hints: dict[str, dict[ClusterEvent, list[tuple[str, HintFn | None]]]] = {}
        for profile, plugins in (events_to_register or {}).items():
            by_event = self._hints.setdefault(profile, {})
            for plugin, registrations in plugins.items():
                for reg in registrations:
                    by_event.setdefault(reg.event, []).append((plugin, reg.hint_fn))
        self._matched: dict[ClusterEvent, _Matched] = {}
        self._incoming: dict[str, dict[str, Any]] = {
            q: {} for q in (ACTIVE, BACKOFF, UNSCHEDULABLE)}
        self._blamed: dict[tuple[str, str], Any] = {}
        if metrics is not None:
            # Read at scrape time: nothing to maintain on the hot path.
            g = metrics.pending_pods
            g.labels(ACTIVE).set_function(lambda: len(self._active))
            g.labels(BACKOFF).set_function(lambda: len(self._backoff))
            g.labels(UNSCHEDULABLE).set_function(lambda: len(self._unsched) - self._num_gated)
            g.labels(GATED).set_function(lambda: self._num_gated)

    # Informer side ---------------------------------------------------------------------

    def add(self, pod: dict[str, Any]) -> None:
        """A new pending pod: to activeQ, or parked as gated if PreEnqueue rejects it."""
        qpi = self._new_queued_pod_info(pod)
        with self._lock:
            if self._move_to_active(qpi, UNSCHEDULED_POD_ADD.label):
                self._cond.notify()

    def update(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """A pending pod changed.

        In activeQ or backoffQ it is updated in place. In unschedulablePods, a change beyond
        status moves it (to backoffQ while it still backs off, else to activeQ through
        PreEnqueue); a status-only change leaves it there. A pod being scheduled comes back
        as this version. An unknown pod is added.
        """
        key = pod_key(new)
        with self._lock:
            if old is not None:
                entry = self._active.get(key)
                if entry is not None:
                    qpi = entry.qpi
                    self._set_pod(qpi, new)
                    # Its order may have changed (priority): push afresh, the old entry dies.
                    self._push_active(qpi)
                    self._compact()
                    self.nominator.update(old, qpi.pod_info)
                    return
                bentry = self._backoff.get(key)
                if bentry is not None:
                    qpi = bentry[2]
                    self._set_pod(qpi, new)
                    self.nominator.update(old, qpi.pod_info)
                    return
            parked = self._unsched.get(key)
            if parked is not None:
                self._set_pod(parked, new)
                self.nominator.update(old, parked.pod_info)
                if old is not None and not is_pod_updated(old, new):
                    return
                self._unsched_remove(key)
                if self._backing_off(parked):
                    self._move_to_backoff(parked, UNSCHEDULED_POD_UPDATE.label)
                elif self._move_to_active(parked, UNSCHEDULED_POD_UPDATE.label):
                    self._cond.notify()
                return
            uid = pod_uid(new)
            if uid in self._in_flight:
                self._in_flight_updates[uid] = new
                return
            if self._move_to_active(self._new_queued_pod_info(new),
                                    UNSCHEDULED_POD_UPDATE.label):
                self._cond.notify()

    def delete(self, pod: dict[str, Any]) -> None:
        """The pod is gone (or no longer ours): drop it from every sub-queue and the nominator."""
        key, uid = pod_key(pod), pod_uid(pod)
        with self._lock:
            self.nominator.delete(uid)
            qpi: QueuedPodInfo | None = None
            entry = self._active.pop(key, None)
            if entry is not None:
                qpi = entry.qpi
            else:
                bentry = self._backoff.pop(key, None)
                qpi = bentry[2] if bentry is not None else self._unsched_remove(key)
            if qpi is not None:
                self._blame(qpi, -1)
                self._compact()
            elif uid in self._in_flight:
                self._in_flight_deleted.add(uid)

    # Scheduling loop side ---------------------------------------------------------------

    def pop(self, timeout: float | None = None) -> QueuedPodInfo | None:
        """The head of activeQ, waiting up to ``timeout`` seconds (None: forever) for one.

        None when the queue is closed or the wait timed out. The pod is *in flight* until
        ``done`` or ``add_unschedulable_if_not_present``; its rejecting plugins are reset.
        """
        with self._lock:
            deadline: float | None = None
            while True:
                if self._closed:
                    return None
                qpi = self._pop_next() if self._next_pod is not None else None
                if qpi is None:
                    qpi = self._pop_active()
                if qpi is not None:
                    break
                if timeout is None:
                    self._clock.wait(self._cond, None)
                    continue
                now = self._clock.monotonic()
                if deadline is None:
                    deadline = now + timeout
                if deadline <= now:
                    return None
                self._clock.wait(self._cond, deadline - now)
            qpi.attempts += 1
            self._cycle += 1
            self._in_flight[qpi.uid] = qpi
            if qpi.unschedulable_plugins or qpi.pending_plugins:
                self._blame(qpi, -1)
                qpi.unschedulable_plugins.clear()
                qpi.pending_plugins.clear()
            return qpi

    def done(self, uid: str) -> None:
        """The pod's scheduling cycle is over (it was assumed, or handed back)."""
        with self._lock:
            self._end_in_flight(uid)

    def scheduling_cycle(self) -> int:
        """The number of pops so far; the scheduler reads it right after popping."""
        return self._cycle

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> bool:
        """Hand back a pod whose attempt (started in ``scheduling_cycle``) failed.

        To backoffQ when a move request came since that cycle began, when the pod changed
        meanwhile, or when no plugin rejected it (an error); else to unschedulablePods.
        False when the pod is already queued or was deleted meanwhile. Ends its in-flight
        state, as ``done``.
        """
        uid, key = qpi.uid, qpi.key
        with self._lock:
            newer = self._in_flight_updates.get(uid)
            deleted = uid in self._in_flight_deleted
            self._end_in_flight(uid)
            if deleted or key in self._unsched or key in self._active or key in self._backoff:
                return False
            qpi.timestamp = self._clock.monotonic()
            changed = newer is not None and is_pod_updated(qpi.pod, newer)
            if newer is not None:
                self._set_pod(qpi, newer)
            self._blame(qpi, 1)
            if (changed or self._move_request_cycle >= scheduling_cycle
                    or not (qpi.unschedulable_plugins or qpi.pending_plugins)):
                self._move_to_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE)
            else:
                self._unsched_add(qpi, SCHEDULE_ATTEMPT_FAILURE)
            return True

    # Moves ------------------------------------------------------------------------------

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old_obj: Any = None,
                                      new_obj: Any = None,
                                      precheck: PreCheck | None = None) -> None:
        """Requeue the unschedulable pods ``event`` may help (those passing ``precheck``)."""
        with self._lock:
            matched = self._match(event)
            if not matched.interested:
                return
            pods = [q for q in self._unsched.values() if precheck is None or precheck(q.pod)]
            self._move_pods(pods, event, matched, old_obj, new_obj)

    def assigned_pod_added(self, pod: dict[str, Any]) -> None:
        """A pod was bound: it may satisfy others' affinity (AssignedPod/Add)."""
        self.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """A bound pod changed: one move per AssignedPod update event it carries."""
        for event in pod_update_events(old, new):
            self.move_all_to_active_or_backoff(event, old, new)

    def activate(self, pods: Iterable[dict[str, Any]]) -> None:
        """Force pods from unschedulablePods or backoffQ into activeQ (through PreEnqueue).

        A pod being scheduled is instead sent to backoffQ if its attempt fails.
        """
        with self._lock:
            activated = False
            for pod in pods:
                key = pod_key(pod)
                qpi = self._unsched_remove(key)
                if qpi is None:
                    bentry = self._backoff.pop(key, None)
                    if bentry is None:
                        if pod_uid(pod) in self._in_flight:
                            self._move_request_cycle = self._cycle
                        continue
                    qpi = bentry[2]
                if self._move_to_active(qpi, FORCE_ACTIVATE.label):
                    activated = True
            self._compact()
            if activated:
                self._cond.notify_all()

    def flush_backoff_completed(self) -> None:
        """Move every pod whose backoff expired to activeQ."""
        with self._lock:
            now = self._clock.monotonic()
            heap, live = self._backoff_heap, self._backoff
            activated = False
            while heap and heap[0][0] <= now:
                entry = heapq.heappop(heap)
                qpi = entry[2]
                if live.get(qpi.key) is not entry:
                    continue
                del live[qpi.key]
                if self._move_to_active(qpi, BACKOFF_COMPLETE):
                    activated = True
            if activated:
                self._cond.notify_all()

    def flush_unschedulable_left_over(self) -> None:
        """Move pods unschedulable for longer than the limit (UnschedulableTimeout)."""
        with self._lock:
            now = self._clock.monotonic()
            limit = self._max_in_unschedulable
            pods = [q for q in self._unsched.values() if now - q.timestamp > limit]
            if pods:
                self._move_pods(pods, UNSCHEDULABLE_TIMEOUT, self._match(UNSCHEDULABLE_TIMEOUT),
                                None, None)

    # Lifecycle and debugging -------------------------------------------------------------

    def run(self, stop: threading.Event | None = None) -> list[threading.Thread]:
        """Start the two flush loops on daemon threads (on the queue's clock).

        They end when ``stop`` is set, or, after ``close``, at their next tick.
        """
        stop = stop or self._stop

        def loop(period: float, flush: Callable[[], None]) -> None:
            while not self._closed and not self._clock.sleep(period, stop):
                flush()

        threads = [
            threading.Thread(target=loop, args=(BACKOFF_FLUSH_PERIOD,
                                                self.flush_backoff_completed),
                             name="queue-flush-backoff", daemon=True),
            threading.Thread(target=loop, args=(UNSCHEDULABLE_FLUSH_PERIOD,
                                                self.flush_unschedulable_left_over),
                             name="queue-flush-unschedulable", daemon=True),
        ]
        for t in threads:
            t.start()
        return threads

    def close(self) -> None:
        """Wake every ``pop`` (they return None from now on) and stop the flush loops."""
        with self._lock:
            self._closed = True
            self._stop.set()
            self._cond.notify_all()

    def pending_pods(self) -> dict[str, Any]:
        """Counts per sub-queue and one line per pod (for /debug and the cache dumper)."""
        with self._lock:
            pods = [_describe(e.qpi, ACTIVE) for e in self._active.values()]
            pods += [_describe(e[2], BACKOFF) for e in self._backoff.values()]
            pods += [_describe(q, GATED if q.gated else UNSCHEDULABLE)
                     for q in self._unsched.values()]
            return {ACTIVE: len(self._active), BACKOFF: len(self._backoff),
                    UNSCHEDULABLE: len(self._unsched) - self._num_gated,
                    GATED: self._num_gated, "pods": pods}

    # Internals (the lock is held) --------------------------------------------------------

    def _new_queued_pod_info(self, pod: dict[str, Any]) -> QueuedPodInfo:
        return QueuedPodInfo(pod, pod_key(pod), pod_uid(pod), self._clock.monotonic())

    def _set_pod(self, qpi: QueuedPodInfo, pod: dict[str, Any]) -> None:
        qpi.pod = pod
        qpi.pod_info = PodInfo(pod)

    def _end_in_flight(self, uid: str) -> None:
        self._in_flight.pop(uid, None)
        # Both are empty unless something happened to a pod while it was being scheduled.
        if self._in_flight_updates:
            self._in_flight_updates.pop(uid, None)
        if self._in_flight_deleted:
            self._in_flight_deleted.discard(uid)

    def _push_active(self, qpi: QueuedPodInfo) -> None:
        entry = self._entry(qpi)
        heapq.heappush(self._active_heap, entry)
        self._active[qpi.key] = entry

    def _pop_active(self) -> QueuedPodInfo | None:
        heap, live = self._active_heap, self._active
        while heap:
            entry = heapq.heappop(heap)
            qpi = entry.qpi
            if live.get(qpi.key) is entry:
                del live[qpi.key]
                return qpi
        return None

    def _pop_next(self) -> QueuedPodInfo | None:
        """The pod the NextPod plugin names, taken from wherever it waits (activeQ, backoffQ
        or unschedulablePods, as upstream removes it by name); None if it is not queued or
        a PreEnqueue plugin holds it."""
        assert self._next_pod is not None
        key = self._next_pod()
        if key is None:
            return None
        entry = self._active.pop(key, None)  # its heap entry is now dead
        if entry is not None:
            return entry.qpi
        backoff = self._backoff.pop(key, None)
        if backoff is not None:
            return backoff[2]
        qpi = self._unsched.get(key)
        if qpi is not None and not qpi.gated:
            return self._unsched_remove(key)
        return None

    def _compact(self) -> None:
        """Rebuild a heap whose dead entries outnumber the live ones."""
        if len(self._active_heap) > 2 * len(self._active) + 64:
            self._active_heap = list(self._active.values())
            heapq.heapify(self._active_heap)
        if len(self._backoff_heap) > 2 * len(self._backoff) + 64:
            self._backoff_heap = list(self._backoff.values())
            heapq.heapify(self._backoff_heap)

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> None:
        assert self._pre_enqueue is not None
        ok, plugin = self._pre_enqueue(qpi.pod_info)
        if ok:
            qpi.gated = False
            qpi.gating_plugin = None
            return
        qpi.gated = True
        qpi.gating_plugin = plugin
        # The gating plugin counts as a rejector: its events and hints can release the pod.
        if plugin and plugin not in qpi.unschedulable_plugins:
            qpi.unschedulable_plugins.add(plugin)
            self._blame_plugin(plugin, _profile(qpi.pod), 1)

    def _move_to_active(self, qpi: QueuedPodInfo, event: str) -> bool:
        """To activeQ if PreEnqueue passes (True), else parked in unschedulablePods."""
        if self._pre_enqueue is not None:
            self._run_pre_enqueue(qpi)
        key = qpi.key
        if qpi.gated:
            if key not in self._unsched and key not in self._active and key not in self._backoff:
                self._unsched_add(qpi, event)
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.monotonic()
        # A repeated add replaces whatever the queue held under this key.
        if self._unsched:
            self._unsched_remove(key)
        if self._backoff:
            self._backoff.pop(key, None)
        self._push_active(qpi)
        self._count_in(ACTIVE, event)
        if event in _NOMINATING_EVENTS and (self.nominator.is_nominated(qpi.uid)
                                            or nominated_node_name(qpi.pod)):
            # A pod may arrive already nominated (status.nominatedNodeName).
            self.nominator.nominate(qpi.pod_info, None)
        return True

    def _move_to_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        expiry = qpi.timestamp + self._backoff_duration(qpi.attempts)
        entry = (expiry, next(self._seq), qpi)
        heapq.heappush(self._backoff_heap, entry)
        self._backoff[qpi.key] = entry
        self._count_in(BACKOFF, event)

    def _backoff_duration(self, attempts: int) -> float:
        if attempts == 0:
            return 0.0  # never tried: no penalty
        return min(self._initial_backoff * 2.0 ** min(attempts - 1, 64), self._max_backoff)

    def _backing_off(self, qpi: QueuedPodInfo) -> bool:
        return qpi.timestamp + self._backoff_duration(qpi.attempts) > self._clock.monotonic()

    def _unsched_add(self, qpi: QueuedPodInfo, event: str) -> None:
        key = qpi.key
        old = self._unsched.get(key)
        if old is None:
            self._count_in(UNSCHEDULABLE, event)
        elif old.gated:
            self._num_gated -= 1
        if qpi.gated:
            self._num_gated += 1
        self._unsched[key] = qpi

    def _unsched_remove(self, key: str) -> QueuedPodInfo | None:
        qpi = self._unsched.pop(key, None)
        if qpi is not None and qpi.gated:
            self._num_gated -= 1
        return qpi

    def _match(self, event: ClusterEvent) -> _Matched:
        matched = self._matched.get(event)
        if matched is None:
            hints = {profile: [h for registered, hs in by_event.items()
                               if registered.match(event) for h in hs]
                     for profile, by_event in self._hints.items()}
            plugins = frozenset(plugin for hs in hints.values() for plugin, _ in hs)
            wildcard = event.is_wildcard()
            matched = _Matched(wildcard or bool(plugins), wildcard, hints, plugins)
            self._matched[event] = matched
        return matched

    def _move_pods(self, pods: list[QueuedPodInfo], event: ClusterEvent, matched: _Matched,
                   old_obj: Any, new_obj: Any) -> None:
        activated = False
        label = event.label
        for qpi in pods:
            if qpi.gated and not self._gate_may_lift(qpi, matched, old_obj, new_obj):
                continue  # only the gating plugin's events (and hints) can lift the gate
            strategy = self._worth_requeuing(qpi, event, matched, old_obj, new_obj)
            if strategy == _SKIP:
                continue
            self._unsched_remove(qpi.key)
            if strategy == _AFTER_BACKOFF and self._backing_off(qpi):
                self._move_to_backoff(qpi, label)
            elif self._move_to_active(qpi, label):
                activated = True
        # Pods being scheduled now may have missed this event: they retry after backoff.
        self._move_request_cycle = self._cycle
        if activated:
            self._cond.notify_all()

    def _gate_may_lift(self, qpi: QueuedPodInfo, matched: _Matched, old_obj: Any,
                       new_obj: Any) -> bool:
        """Whether the event may let the gating plugin's PreEnqueue pass: it registered the
        event and one of its hints for it does not say QueueSkip (as kube-scheduler asks the
        gating plugin's hints); a failing hint requeues."""
        plugin = qpi.gating_plugin
        if plugin not in matched.plugins:
            return False
        for registered, hint_fn in matched.hints.get(_profile(qpi.pod)) or []:
            if registered != plugin:
                continue
            if hint_fn is None:
                return True
            try:
                if hint_fn(qpi.pod, old_obj, new_obj) != QueueingHint.QUEUE_SKIP:
                    return True
            except Exception:  # noqa: BLE001 - a failing hint must not strand the pod
                log.warning("queueing hint of plugin %s failed for gated pod %s; requeueing",
                            plugin, qpi.key, exc_info=True)
                return True
        return False

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, matched: _Matched,
                         old_obj: Any, new_obj: Any) -> int:
        rejected, pending = qpi.unschedulable_plugins, qpi.pending_plugins
        if (not rejected and not pending) or matched.wildcard:
            return _AFTER_BACKOFF
        hints = matched.hints.get(_profile(qpi.pod))
        if hints is None:
            return _AFTER_BACKOFF  # a profile without registrations: be safe, retry
        strategy = _SKIP
        for plugin, hint_fn in hints:
            if plugin not in rejected and plugin not in pending:
                continue
            if hint_fn is not None:
                try:
                    hint = hint_fn(qpi.pod, old_obj, new_obj)
                except Exception:  # noqa: BLE001 - a failing hint must not strand the pod
                    log.warning("queueing hint of plugin %s failed for pod %s on %s; "
                                "requeueing", plugin, qpi.key, event.label, exc_info=True)
                    hint = QueueingHint.QUEUE
                if hint == QueueingHint.QUEUE_SKIP:
                    continue
            if plugin in pending:
                return _IMMEDIATELY  # a Pending rejection lifted: no backoff owed
            if not pending:
                return _AFTER_BACKOFF
            strategy = _AFTER_BACKOFF
        return strategy

    def _holds(self, pod: dict[str, Any]) -> bool:
        """Whether the pod is queued or being scheduled (the nominator's pod check)."""
        key = pod_key(pod)
        return pod_uid(pod) in self._in_flight or key in self._unsched or key in self._active \
            or key in self._backoff

    def _count_in(self, queue: str, event: str) -> None:
        if self._metrics is None:
            return
        by_event = self._incoming[queue]
        counter = by_event.get(event)
        if counter is None:
            counter = by_event[event] = self._metrics.queue_incoming_pods.labels(queue, event)
        counter.inc()

    def _blame(self, qpi: QueuedPodInfo, delta: int) -> None:
        """Count the pod for (delta 1) or against (-1) each plugin that rejected it."""
        if self._metrics is None:
            return
        profile = _profile(qpi.pod)
        for plugin in qpi.unschedulable_plugins | qpi.pending_plugins:
            self._blame_plugin(plugin, profile, delta)

    def _blame_plugin(self, plugin: str, profile: str, delta: int) -> None:
        if self._metrics is None:
            return
        gauge = self._blamed.get((plugin, profile))
        if gauge is None:
            gauge = self._blamed[plugin, profile] = self._metrics.unschedulable_pods.labels(
                plugin, profile)
        gauge.inc(delta)


def _describe(qpi: QueuedPodInfo, queue: str) -> dict[str, Any]:
    return {"pod": qpi.key, "uid": qpi.uid, "queue": queue, "attempts": qpi.attempts,
            "unschedulablePlugins": sorted(qpi.unschedulable_plugins),
            "pendingPlugins": sorted(qpi.pending_plugins), "gatingPlugin": qpi.gating_plugin}


__all__ = [
    "ACTIVE", "BACKOFF", "DEFAULT_POD_INITIAL_BACKOFF", "DEFAULT_POD_MAX_BACKOFF",
    "DEFAULT_POD_MAX_IN_UNSCHEDULABLE_DURATION", "DEFAULT_PROFILE", "GATED", "UNSCHEDULABLE",
    "EventsToRegister", "LessFn", "PreCheck", "PreEnqueueFn", "QueuedPodInfo",
    "SchedulingQueue", "is_pod_updated",
]
