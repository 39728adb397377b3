"""The framework of one scheduling profile: its plugins, in order, run at each extension point.

Corresponds to kube-scheduler ``pkg/scheduler/framework/runtime/framework.go``
(``frameworkImpl``) and ``waiting_pods_map.go``, with Koordinator's framework extender
(koordinator ``pkg/scheduler/frameworkext/framework_extender.go``) folded in: one
``Framework`` per profile, which is also the ``frameworkext.ExtendedHandle`` every plugin is
built with (snapshot, clock, client, informers, nominator, binder, the profile's event
recorder (``FrameworkDeps.recorder_factory`` of its schedulerName), metrics,
forget-pod handlers, and the simulation helpers preemption needs), and which runs the
profile's transformers (``frameworkext.framework_extender.Transformers``) before PreFilter,
Filter and Score.

Filter and Score run vectorised over the snapshot (see ``interface.py``); the scalar
``run_filter_plugins`` is the reference used for single nodes. A profile that enables a filter
(score) transformer filters (scores) node by node through the scalar ``filter`` (``score``),
because a transformer changes one NodeInfo at a time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from api.meta import format_duration
from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.framework.binder import BINDING_ANNOTATIONS, Binder, binding_annotations
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import WILDCARD, ClusterEventWithHint
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    MAX_PERMIT_TIMEOUT,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NodeToStatus,
    PermitPlugin,
    Plugin,
    PodNominator,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.framework_extender import Transformers
from scheduler.frameworkext.interface import (
    ClientSet,
    EventRecorder,
    FakePodOwner,
    ForgetPodHandler,
    InformerFactory,
    RecorderFactory,
)
from scheduler.frameworkext.nominating import nominated_pods_of_the_same_job

if TYPE_CHECKING:
    from scheduler.apis.config.base import PluginArgs
    from scheduler.metrics.metrics import SchedulerMetrics

log = logging.getLogger(__name__)


class FrameworkError(Exception):
    """A profile that cannot be built (unknown plugin, plugin at a point it does not serve)."""


@dataclass
class FrameworkDeps:
    """What the scheduler hands every profile (and through it, every plugin)."""

    snapshot: Snapshot = field(default_factory=Snapshot)
    clock: Clock = REAL_CLOCK
    client: ClientSet | None = None
    informer_factory: InformerFactory | None = None
    nominator: PodNominator | None = None
    binder: Binder | None = None
    recorder_factory: RecorderFactory | None = None
    metrics: SchedulerMetrics | None = None
    parallelism: int = 16
    # Called by plugins to move pods back to activeQ (upstream PodActivator).
    activate: Callable[[Sequence[dict[str, Any]]], None] | None = None


class WaitingPod:
    """A pod parked at Permit until every waiting plugin allows it or one rejects it.

    ``wait(cond, timeout)`` is the scheduler clock's, so that a FakeClock's step, not real
    time, brings a plugin's timeout. Instead of blocking in ``wait``, a caller may register
    ``when_decided`` and have ``PermitTimer`` bring the timeout.
    """

    def __init__(self, pod: PodInfo, plugin_timeouts: Mapping[str, float],
                 monotonic: Callable[[], float],
                 wait: Callable[[threading.Condition, float | None], None] | None = None
                 ) -> None:
        self.pod = pod
        self._cond = threading.Condition()
        now = monotonic()
        self.since = now  # on the clock's monotonic scale, as deadline()
        # plugin → (deadline, how long it asked to wait).
        self._pending = {name: (now + t, t) for name, t in plugin_timeouts.items()}
        self._monotonic = monotonic
        self._wait = wait or (lambda cond, timeout: cond.wait(timeout))
        self._result: Status | None = None
        self._callbacks: list[Callable[[], None]] = []

    def pending_plugins(self) -> list[str]:
        with self._cond:
            return list(self._pending)

    @property
    def decided(self) -> bool:
        with self._cond:
            return self._result is not None

    def deadline(self, plugin: str | None = None) -> float | None:
        """When (clock.monotonic()) the plugin's wait times out, or without a plugin the
        first pending plugin's; None once decided or once that plugin allowed."""
        with self._cond:
            if self._result is not None:
                return None
            if plugin is not None:
                pending = self._pending.get(plugin)
                return pending[0] if pending is not None else None
            return min((d for d, _ in self._pending.values()), default=None)

    def _decide(self, status: Status) -> list[Callable[[], None]]:
        """Set the outcome (the lock is held); the callbacks to call once it is released."""
        self._result = status
        self._cond.notify_all()
        callbacks, self._callbacks = self._callbacks, []
        return callbacks

    def when_decided(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the pod is allowed or rejected (now, if it is)."""
        with self._cond:
            if self._result is None:
                self._callbacks.append(callback)
                return
        callback()

    def allow(self, plugin: str) -> None:
        callbacks: list[Callable[[], None]] = []
        with self._cond:
            self._pending.pop(plugin, None)
            if not self._pending and self._result is None:
                callbacks = self._decide(Status())
        for callback in callbacks:
            callback()

    def reject(self, plugin: str, message: str) -> None:
        callbacks: list[Callable[[], None]] = []
        with self._cond:
            if self._result is None:
                callbacks = self._decide(Status(Code.UNSCHEDULABLE, message, plugin=plugin))
        for callback in callbacks:
            callback()

    def _timed_out(self, now: float) -> Status | None:
        expired = [(p, t) for p, (deadline, t) in self._pending.items() if deadline <= now]
        if not expired:
            return None
        plugin, waited = expired[0]
        return Status(Code.UNSCHEDULABLE, f"rejected due to timeout after waiting "
                                          f"{format_duration(waited)} at plugin {plugin}",
                      plugin=plugin)

    def expire(self) -> None:
        """Reject the pod if a plugin's wait ran out (what ``wait`` does when it wakes)."""
        callbacks: list[Callable[[], None]] = []
        with self._cond:
            timeout = self._timed_out(self._monotonic()) if self._result is None else None
            if timeout is not None:
                callbacks = self._decide(timeout)
        for callback in callbacks:
            callback()

    def wait(self) -> Status:
        callbacks: list[Callable[[], None]] = []
        with self._cond:
            while (result := self._result) is None:
                now = self._monotonic()
                timeout = self._timed_out(now)
                if timeout is not None:
                    callbacks = self._decide(result := timeout)
                    break
                self._wait(self._cond, min(d for d, _ in self._pending.values()) - now)
        for callback in callbacks:
            callback()
        return result


class PermitTimer:
    """Brings the timeouts of pods parked at Permit: one thread for all of them, so that a
    waiting pod needs no thread of its own (upstream arms a timer per pod)."""

    def __init__(self, clock: Clock = REAL_CLOCK) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, WaitingPod]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def add(self, pod: WaitingPod) -> None:
        deadline = pod.deadline()
        if deadline is None:
            return
        with self._cond:
            heapq.heappush(self._heap, (deadline, next(self._seq), pod))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="permit-timer",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _next_due(self) -> WaitingPod | None:
        """The next pod whose deadline came (None once stopped); waits for it."""
        with self._cond:
            while not self._stopped:
                while self._heap and self._heap[0][2].decided:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._clock.wait(self._cond, None)
                    continue
                left = self._heap[0][0] - self._clock.monotonic()
                if left <= 0:
                    return heapq.heappop(self._heap)[2]
                self._clock.wait(self._cond, left)
            return None

    def _run(self) -> None:
        while (pod := self._next_due()) is not None:
            pod.expire()
            self.add(pod)  # a plugin whose wait ran out allowed it meanwhile: the next one


class Framework:
    """The plugins of one profile and the code that runs them at each extension point."""

    def __init__(self, profile_name: str, plugins: Mapping[str, Sequence[tuple[str, int]]],
                 registry: Mapping[str, type[Plugin]],
                 args: Mapping[str, PluginArgs | dict[str, Any] | None],
                 deps: FrameworkDeps | None = None, *,
                 percentage_of_nodes_to_score: int | None = None) -> None:
        self.profile_name = profile_name
        self.deps = deps or FrameworkDeps()
        factory = self.deps.recorder_factory
        self._recorder = factory(profile_name) if factory is not None else None
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        # Plugins register theirs while they are built.
        self._forget_pod_handlers: list[ForgetPodHandler] = []
        self.instances: dict[str, Plugin] = {}
        for point, entries in plugins.items():
            for name, _ in entries:
                if name in self.instances:
                    continue
                cls = registry.get(name)
                if cls is None:
                    raise FrameworkError(f"profile {profile_name!r}: plugin {name!r} "
                                         f"(at {point}) is not registered")
                try:
                    self.instances[name] = cls(args.get(name), self)
                except Exception as err:
                    raise FrameworkError(f"profile {profile_name!r}: initializing plugin "
                                         f"{name!r}: {err}") from err
        self.weights: dict[str, int] = {}

        def at(point: str, base: type[Plugin]) -> list[Any]:
            out = []
            for name, weight in plugins.get(point, ()):
                p = self.instances[name]
                if not isinstance(p, base):
                    raise FrameworkError(f"profile {profile_name!r}: plugin {name!r} does "
                                         f"not extend {point}")
                out.append(p)
                if point == "score":
                    self.weights[name] = weight or 1
            return out

        self.pre_enqueue: list[PreEnqueuePlugin] = at("preEnqueue", PreEnqueuePlugin)
        queue_sort: list[QueueSortPlugin] = at("queueSort", QueueSortPlugin)
        if len(queue_sort) != 1:
            raise FrameworkError(f"profile {profile_name!r}: exactly one queueSort plugin is "
                                 f"needed, got {[p.name for p in queue_sort]}")
        self.queue_sort = queue_sort[0]
        self.pre_filter: list[PreFilterPlugin] = at("preFilter", PreFilterPlugin)
        self.filter: list[FilterPlugin] = at("filter", FilterPlugin)
        self.post_filter: list[PostFilterPlugin] = at("postFilter", PostFilterPlugin)
        self.pre_score: list[PreScorePlugin] = at("preScore", PreScorePlugin)
        self.score: list[ScorePlugin] = at("score", ScorePlugin)
        self.reserve: list[ReservePlugin] = at("reserve", ReservePlugin)
        self.permit: list[PermitPlugin] = at("permit", PermitPlugin)
        self.pre_bind: list[PreBindPlugin] = at("preBind", PreBindPlugin)
        self.bind: list[BindPlugin] = at("bind", BindPlugin)
        if not self.bind:
            raise FrameworkError(f"profile {profile_name!r}: at least one bind plugin is needed")
        self.post_bind: list[PostBindPlugin] = at("postBind", PostBindPlugin)
        self.transformers = Transformers.enabled(self.pre_filter, self.filter, self.score)
        self._fake_pod_owners = tuple(p for p in self.instances.values()
                                      if isinstance(p, FakePodOwner))
        self._waiting: dict[str, WaitingPod] = {}
        self._waiting_lock = threading.Lock()

    # Handle ------------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        return self.deps.snapshot

    @property
    def clock(self) -> Clock:
        return self.deps.clock

    @property
    def client(self) -> ClientSet | None:
        return self.deps.client

    @property
    def informer_factory(self) -> InformerFactory | None:
        return self.deps.informer_factory

    @property
    def nominator(self) -> PodNominator | None:
        return self.deps.nominator

    @property
    def binder(self) -> Binder | None:
        return self.deps.binder

    @property
    def recorder(self) -> EventRecorder | None:
        """Records as this profile (reportingController: its schedulerName)."""
        return self._recorder

    @property
    def metrics(self) -> SchedulerMetrics | None:
        return self.deps.metrics

    def activate(self, pods: Sequence[dict[str, Any]]) -> None:
        """Move ``pods`` out of unschedulablePods or backoffQ into activeQ (upstream's
        PodActivator); nothing without a queue."""
        if self.deps.activate is not None:
            self.deps.activate(pods)

    def register_forget_pod_handler(self, handler: ForgetPodHandler) -> None:
        self._forget_pod_handlers.append(handler)

    def plugin(self, name: str) -> Plugin | None:
        return self.instances.get(name)

    def fake_pod_owner(self, pod: PodInfo) -> FakePodOwner | None:
        """The plugin whose fake pod ``pod`` is (a reserve pod's Reservation); None for a
        real pod."""
        for owner in self._fake_pod_owners:
            if owner.owns(pod):
                return owner
        return None

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name → the cluster events that may make pods it rejected schedulable.

        A plugin without EnqueueExtensions is requeued by every event, as upstream.
        """
        return {name: (p.events_to_register() if isinstance(p, EnqueueExtensions)
                       else [ClusterEventWithHint(WILDCARD)])
                for name, p in self.instances.items()}

    def _observe(self, plugin: str, point: str, status: Status | None, start: float) -> None:
        m = self.deps.metrics
        if m is not None:
            m.observe_plugin(plugin, point, status, time.perf_counter() - start)

    # Queue -------------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: PodInfo) -> tuple[bool, str | None]:
        for p in self.pre_enqueue:
            status = p.pre_enqueue(pod)
            if not is_success(status):
                return False, p.name
        return True, None

    # PreFilter / Filter ------------------------------------------------------------------

    def run_pre_filter(self, state: CycleState, pod: PodInfo
                       ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """(merged result, status, the plugins whose result restricted the nodes).

        The PreFilter plugins see the pod as the BeforePreFilter transformers left it;
        AfterPreFilter runs when they all passed.
        """
        pod, status = self.transformers.before_pre_filter(state, pod)
        if status is not None:
            return None, status, set()
        result, status, restricting = self._run_pre_filter_plugins(state, pod)
        if status is None:
            status = self.transformers.after_pre_filter(state, pod, result)
            if status is not None:
                return None, status, set()
        return result, status, restricting

    def _run_pre_filter_plugins(self, state: CycleState, pod: PodInfo
                                ) -> tuple[PreFilterResult | None, Status | None, set[str]]:
        """An Unschedulable plugin does not stop the others, as upstream (a later
        UnschedulableAndUnresolvable must still be able to rule preemption out)."""
        result: PreFilterResult | None = None
        restricting: set[str] = set()
        rejected: Status | None = None
        snap = self.deps.snapshot
        rec = state.record_plugin_metrics
        for p in self.pre_filter:
            start = time.perf_counter() if rec else 0.0
            r, status = p.pre_filter(state, pod, snap)
            if rec:
                self._observe(p.name, "PreFilter", status, start)
            if status is not None and status.code != Code.SUCCESS:
                if status.code == Code.SKIP:
                    state.skip_filter_plugins.add(p.name)
                    continue
                status.with_plugin(p.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, set()
                if status.code == Code.UNSCHEDULABLE:
                    rejected = status
                    continue
                return None, Status(Code.ERROR, f"running PreFilter plugin {p.name!r}: "
                                    f"{status.message()}", plugin=p.name,
                                    error=status.error), set()
            if r is not None and r.node_names is not None:
                restricting.add(p.name)
                result = r if result is None else result.merge(r)
                if not result.node_names:
                    if len(restricting) == 1:
                        msg = f"node(s) didn't satisfy plugin {p.name}"
                    else:
                        msg = ("node(s) didn't satisfy plugin(s) "
                               f"[{' '.join(sorted(restricting))}] simultaneously")
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg), restricting
        return result, rejected, restricting

    def filter_masks(self, state: CycleState,
                     pod: PodInfo) -> list[tuple[FilterPlugin, np.ndarray]]:
        """Run every (non-skipped) Filter plugin over the whole snapshot.

        Returns the masks of the plugins that rejected at least one node, in plugin order.
        """
        if self.transformers.filter:
            return self._filter_masks_node_by_node(state, pod)
        out = []
        snap = self.deps.snapshot
        skip = state.skip_filter_plugins
        rec = state.record_plugin_metrics
        for p in self.filter:
            if p.name in skip:
                continue
            start = time.perf_counter() if rec else 0.0
            mask = p.filter_nodes(state, pod, snap)
            if rec:
                self._observe(p.name, "Filter", None, start)
            if mask is not None:
                out.append((p, mask))
        return out

    def _filter_masks_node_by_node(self, state: CycleState,
                                   pod: PodInfo) -> list[tuple[FilterPlugin, np.ndarray]]:
        """``filter_masks`` through the scalar Filter on each node as the BeforeFilter
        transformers leave it; a transformer's failure rejects the node in its own mask."""
        infos = self.deps.snapshot.node_infos
        skip = state.skip_filter_plugins
        masks = {p.name: np.ones(len(infos), dtype=bool) for p in self.filter}
        for i, node_info in enumerate(infos):
            pod_i, node_i, status = self.transformers.before_filter(state, pod, node_info)
            if status is not None:
                masks[status.plugin][i] = False
                continue
            for p in self.filter:
                if p.name not in skip and not is_success(p.filter(state, pod_i, node_i)):
                    masks[p.name][i] = False
        return [(p, masks[p.name]) for p in self.filter if not masks[p.name].all()]

    def run_filter_plugins(self, state: CycleState, pod: PodInfo,
                           node_info: NodeInfo) -> Status | None:
        """Scalar Filter on one node: the first non-Success status, or None."""
        for p in self.filter:
            if p.name in state.skip_filter_plugins:
                continue
            status = p.filter(state, pod, node_info)
            if status is not None and status.code != Code.SUCCESS:
                status.with_plugin(p.name)
                if not status.is_rejected():
                    return Status(Code.ERROR, f"running {p.name!r} filter plugin: "
                                  f"{status.message()}", plugin=p.name, error=status.error)
                return status
        return None

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         to_add: PodInfo, node_info: NodeInfo) -> Status | None:
        for p in self.pre_filter:
            if p.name in state.skip_filter_plugins:
                continue
            ext = p.pre_filter_extensions()
            if ext is not None:
                status = ext.add_pod(state, pod, to_add, node_info)
                if not is_success(status):
                    return status
        return None

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            to_remove: PodInfo,
                                            node_info: NodeInfo) -> Status | None:
        for p in self.pre_filter:
            if p.name in state.skip_filter_plugins:
                continue
            ext = p.pre_filter_extensions()
            if ext is not None:
                status = ext.remove_pod(state, pod, to_remove, node_info)
                if not is_success(status):
                    return status
        return None

    def nominated_pods_for(self, pod: PodInfo, node_name: str) -> list[PodInfo]:
        """Pods nominated to ``node_name`` that ``pod`` must leave room for."""
        nominator = self.deps.nominator
        if nominator is None:
            return []
        return [p for p in nominator.nominated_pods_for_node(node_name)
                if p.uid != pod.uid and p.priority >= pod.priority]

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo) -> Status | None:
        """Filter (after the BeforeFilter transformers) with higher-or-equal-priority nominated
        pods counted (but those of the job a preemption simulates), then without them."""
        pod, node_info, status = self.transformers.before_filter(state, pod, node_info)
        if status is not None:
            return status
        nominated = self.nominated_pods_for(pod, node_info.name)
        same_job = nominated_pods_of_the_same_job(state)
        if same_job:
            nominated = [p for p in nominated if p.uid not in same_job]
        if nominated:
            state2 = state.clone()
            ni2 = node_info.clone()
            for other in nominated:
                ni2.add_pod(other)
                status = self.run_pre_filter_extension_add_pod(state2, pod, other, ni2)
                if not is_success(status):
                    return status
            status = self.run_filter_plugins(state2, pod, ni2)
            if not is_success(status):
                return status
        return self.run_filter_plugins(state, pod, node_info)

    # PostFilter --------------------------------------------------------------------------

    def run_post_filter(self, state: CycleState, pod: PodInfo,
                        statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        for p in self.post_filter:
            r, status = p.post_filter(state, pod, statuses)
            if is_success(status):
                return r, Status(plugin=p.name)
            assert status is not None
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, status.with_plugin(p.name)
            if not status.is_rejected():
                return None, Status(Code.ERROR, status.message(), plugin=p.name,
                                    error=status.error)
            reasons.extend(status.reasons)
            rejector = rejector or p.name
            # The last plugin with a result decides the nomination (a result without a node
            # clears it), as upstream's last non-noop PostFilterResult.
            if r is not None:
                result = r
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # Scoring -----------------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: PodInfo,
                      nodes: Sequence[NodeInfo]) -> Status | None:
        for p in self.pre_score:
            status = p.pre_score(state, pod, nodes)
            if status is None or status.code == Code.SUCCESS:
                continue
            if status.code == Code.SKIP:
                state.skip_score_plugins.add(p.name)
                continue
            return Status(Code.ERROR, f"running PreScore plugin {p.name!r}: "
                          f"{status.message()}", plugin=p.name, error=status.error)
        return None

    def run_score(self, state: CycleState, pod: PodInfo, idx: np.ndarray,
                  per_plugin: dict[str, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, Status | None]:
        """Weighted total score of the nodes ``idx``; fills ``per_plugin`` when given.

        The Score plugins see the pod and nodes as the BeforeScore transformers left them.
        """
        total = np.zeros(len(idx), dtype=np.int64)
        snap = self.deps.snapshot
        transformed: Sequence[NodeInfo] | None = None
        if self.transformers.score:
            pod, transformed, status = self.transformers.before_score(
                state, pod, [snap.node_infos[i] for i in idx])
            if status is not None:
                return total, status
        skip = state.skip_score_plugins
        rec = state.record_plugin_metrics
        for p in self.score:
            if p.name in skip:
                continue
            start = time.perf_counter() if rec else 0.0
            scores, status = (p.score_nodes(state, pod, snap, idx) if transformed is None
                              else p.score_each(state, pod, transformed))
            if status is not None and not status.is_success():
                return total, Status(Code.ERROR, f"running Score plugin {p.name!r}: "
                                     f"{status.message()}", plugin=p.name)
            if p.has_normalize:
                status = p.normalize_score(state, pod, scores)
                if status is not None and not status.is_success():
                    return total, Status(Code.ERROR, f"running Normalize on Score plugin "
                                         f"{p.name!r}: {status.message()}", plugin=p.name)
            if rec:
                self._observe(p.name, "Score", None, start)
            if len(scores) and (scores.min() < 0 or scores.max() > MAX_NODE_SCORE):
                bad = int(scores.max()) if scores.max() > MAX_NODE_SCORE else int(scores.min())
                return total, Status(Code.ERROR, f"plugin {p.name!r} returns an invalid score "
                                     f"{bad}, it should in the range of [0, 100] after "
                                     f"normalizing", plugin=p.name)
            if per_plugin is not None:
                per_plugin[p.name] = scores.copy()
            total += scores * self.weights[p.name]
        return total, None

    # Reserve / Permit --------------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for p in self.reserve:
            status = p.reserve(state, pod, node_name)
            if not is_success(status):
                assert status is not None
                status.with_plugin(p.name)
                if status.is_rejected():
                    return status
                return Status(Code.ERROR, f"running Reserve plugin {p.name!r}: "
                              f"{status.message()}", plugin=p.name, error=status.error)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for p in reversed(self.reserve):
            try:
                p.unreserve(state, pod, node_name)
            except Exception:  # noqa: BLE001 - one plugin's failure must not skip the rest
                log.exception("Unreserve of plugin %s failed for pod %s", p.name, pod.key)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        timeouts: dict[str, float] = {}
        for p in self.permit:
            status, timeout = p.permit(state, pod, node_name)
            if status is None or status.code == Code.SUCCESS:
                continue
            status.with_plugin(p.name)
            if status.is_rejected():
                return status
            if status.code == Code.WAIT:
                timeouts[p.name] = min(timeout, MAX_PERMIT_TIMEOUT)
                continue
            return Status(Code.ERROR, f"running Permit plugin {p.name!r}: "
                          f"{status.message()}", plugin=p.name, error=status.error)
        if timeouts:
            clock = self.deps.clock
            with self._waiting_lock:
                self._waiting[pod.uid] = WaitingPod(pod, timeouts, clock.monotonic, clock.wait)
            return Status(Code.WAIT, f"one or more plugins asked to wait: {sorted(timeouts)}")
        return None

    def wait_on_permit(self, pod: PodInfo) -> Status | None:
        with self._waiting_lock:
            wp = self._waiting.get(pod.uid)
        if wp is None:
            return None
        try:
            status = wp.wait()
        finally:
            with self._waiting_lock:
                self._waiting.pop(pod.uid, None)
        return None if status.is_success() else status

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        with self._waiting_lock:
            return self._waiting.get(uid)

    def waiting_pods(self) -> list[WaitingPod]:
        with self._waiting_lock:
            return list(self._waiting.values())

    def forget_pod(self, pod: PodInfo) -> None:
        """Tell plugins that keep their own view of assigned pods (the registered ForgetPod
        handlers, e.g. LoadAwareScheduling's) that an assumed pod was forgotten."""
        for handler in self._forget_pod_handlers:
            handler(pod)

    # Binding -----------------------------------------------------------------------------

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for p in self.pre_bind:
            status = p.pre_bind(state, pod, node_name)
            if not is_success(status):
                assert status is not None
                return Status(status.code if status.is_rejected() else Code.ERROR,
                              f"running PreBind plugin {p.name!r}: {status.message()}",
                              plugin=p.name, error=status.error)
        return None

    def defer_to_binding(self, state: CycleState, annotations: Mapping[str, str]) -> bool:
        """Leave ``annotations`` for the binding to set on the pod; False (nothing deferred:
        the caller patches) unless every Bind plugin of the profile carries them."""
        if not all(p.carries_annotations for p in self.bind):
            return False
        state.write(BINDING_ANNOTATIONS, {**binding_annotations(state), **annotations})
        return True

    def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        for p in self.bind:
            status = p.bind(state, pod, node_name)
            if status is not None and status.code == Code.SKIP:
                continue
            if not is_success(status):
                assert status is not None
                return Status(status.code if status.is_rejected() else Code.ERROR,
                              f"binding rejected: running Bind plugin {p.name!r}: "
                              f"{status.message()}", plugin=p.name, error=status.error)
            return None
        return Status(Code.SKIP, "no Bind plugin handled the pod")

    def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        for p in self.post_bind:
            try:
                p.post_bind(state, pod, node_name)
            except Exception:  # noqa: BLE001 - PostBind is informational
                log.exception("PostBind of plugin %s failed for pod %s", p.name, pod.key)
