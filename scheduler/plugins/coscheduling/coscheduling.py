"""The Coscheduling plugin: gang scheduling, all or nothing, for PodGroups and gang annotations.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/coscheduling.go`` with the
decisions of ``core/core.go`` (``PodGroupManager``): PreEnqueue and PreFilter hold a gang's
pods until every gang of its group has minMember pods; the first member to pass PreFilter opens
the group's scheduling context (``core/gang_context.py``), and NextPod hands the scheduler the
group's other pending members next; Permit parks assumed members until
enough are waiting (by the gang's match policy), then allows the whole group; PostFilter gives
the group's members not tried yet the failure as their condition and, in Strict mode, rejects
the group's waiting members when one member cannot be placed; with ``enablePreemption`` it
also runs job-level preemption (``core/preemption.py``): for the whole group, or for a pod
without a gang (or of a once-satisfied gang) alone; Unreserve
(a Permit timeout or rejection included) does the same; PreBind writes the bind-gang
annotations on members bound together; PostBind marks the group once satisfied. With a client
and informers, the plugin also runs the PodGroup status controller
(``controller/podgroup.py``, ``controllerWorkers`` workers). Score only
ranks nodes for network-topology gangs, which this version does not plan (PreScore skips).

Beyond upstream: ``explain_pod`` gives a gang pod's why-pending entry its ``gang`` section
(``core/gang_summary.py``), held at PreEnqueue or not; and where upstream leaves held pods
silent (koordinator#2480), a pod that PreEnqueue holds for ``HOLD_REPORT_DELAY`` (1 s) gets a
``FailedScheduling`` event and a ``PodScheduled=False`` condition saying which gang it waits
for, how many members exist and how many are needed; each message once per pod, only the
latest of those not sent yet, and none once the pod is released.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from api.extension.coscheduling import (
    ANNOTATION_BIND_GANG_GROUP_ID,
    ANNOTATION_BIND_GANG_MEMBER_COUNT,
    DEPRECATED_ANNOTATION_BIND_GANG_GROUP_ID,
    DEPRECATED_ANNOTATION_BIND_GANG_MEMBER_COUNT,
    GangMatchPolicy,
    GangMode,
    get_gang_id,
)
from api.extension.objects import annotations_of
from api.meta import format_time
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.resources import POD_GROUPS, PODS
from pkg.events.events import WARNING
from scheduler.apis.config import CoschedulingArgs
from scheduler.diagnosis import Diagnosis, FitError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    POD,
    POD_GROUP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import (
    EnqueueExtensions,
    NodeToStatus,
    PermitPlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle, NextPodPlugin, PodState
from scheduler.plugins.coscheduling.controller.podgroup import PodGroupController
from scheduler.plugins.coscheduling.core import gang_summary
from scheduler.plugins.coscheduling.core.gang import Gang
from scheduler.plugins.coscheduling.core.gang_cache import GangCache
from scheduler.plugins.coscheduling.core.gang_context import (
    REASON_ALL_PENDING_PODS_ATTEMPTED,
    REASON_GANG_SUCCEEDED,
    GangSchedulingContextHolder,
)
from scheduler.plugins.coscheduling.core.preemption import JobPreemptionEvaluator

log = logging.getLogger(__name__)

NAME = "Coscheduling"
# A pod held at PreEnqueue is reported once held this long (seconds): a gang's pods arriving in
# one informer list or one burst of creates hold each other only for moments, and reporting
# every such hold would cost two API writes per pod (a scheduler restart with many pending
# gangs would flood the API server with them).
HOLD_REPORT_DELAY = 1.0
REASON_UNSCHEDULABLE = "Unschedulable"


@dataclass(slots=True)
class _UnsentReport:
    pod: dict[str, Any]
    message: str
    event: bool  # a held pod's report: an event too, not only the condition
    due: float  # time.monotonic() when it may go out
    hold: bool  # the message is PreEnqueue's hold (recomputed when sent), not PostFilter's


def _bind_annotations(group_id: str | None, count: int) -> dict[str, str | None]:
    """The bind-gang annotations to set, None for all (to delete) when ``group_id`` is."""
    value_count = str(count) if group_id is not None else None
    return {ANNOTATION_BIND_GANG_GROUP_ID: group_id,
            ANNOTATION_BIND_GANG_MEMBER_COUNT: value_count,
            DEPRECATED_ANNOTATION_BIND_GANG_GROUP_ID: group_id,
            DEPRECATED_ANNOTATION_BIND_GANG_MEMBER_COUNT: value_count}


class Coscheduling(PreEnqueuePlugin, PreFilterPlugin, PostFilterPlugin, PreScorePlugin,
                   ScorePlugin, ReservePlugin, PermitPlugin, PreBindPlugin, PostBindPlugin,
                   NextPodPlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, args: CoschedulingArgs | None, handle: ExtendedHandle) -> None:
        args = args if args is not None else CoschedulingArgs()
        errors = args.validate_args()
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        super().__init__(args, handle)
        self.args = args
        if args.aware_network_topology:
            log.warning("awareNetworkTopology is set but network-topology gang placement is not "
                        "implemented; gangs are placed without ClusterNetworkTopology")
        self.cache = GangCache(args, handle.recorder, handle.activate, self._refresh_holds)
        self.context = GangSchedulingContextHolder()
        # One group rejection at a time: a rejected member's Unreserve (on a binding thread,
        # or this one) rejects the group again, and must find every member already decided
        # with the first rejection's message (the root cause, such as a quota), as upstream's
        # asynchronous Reject leaves it. Re-entrant for the binding cycle run in place.
        self._rejecting = threading.RLock()
        self.preemption = (JobPreemptionEvaluator(NAME, handle, self.cache)
                           if args.enable_preemption else None)
        # Held-pod reports go out on their own thread: PreEnqueue runs under the queue's lock.
        self._reporter = ThreadPoolExecutor(1, thread_name_prefix="coscheduling-report")
        self._reported: dict[str, str] = {}  # pod uid → the hold message last reported
        # Pod uid → the report waiting for the reporter thread.
        self._unsent: dict[str, _UnsentReport] = {}
        self._unsent_cond = threading.Condition()
        self._flushing = False
        self.controller: PodGroupController | None = None
        factory = handle.informer_factory
        if factory is not None:
            pod_groups = factory.informer_for(POD_GROUPS, typed=False)
            pod_groups.add_event_handler(self.cache.pod_group_handler())
            pods = factory.informer_for(PODS, typed=False)
            pods.add_event_handler(self.cache.pod_handler())
            pods.add_event_handler(EventHandlerFuncs(
                delete=lambda obj: self.forget_reported(
                    str((deleted_object(obj).get("metadata") or {}).get("uid")))))
            if handle.client is not None:
                self.controller = PodGroupController(
                    self.cache, handle.client, pod_groups, pods, handle.clock,
                    args.controller_workers)
                # Its workers start once the informers synced, which they do only once the
                # scheduler runs them (after winning leader election).
                threading.Thread(target=self.controller.start, name="podgroup-controller-start",
                                 daemon=True).start()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE
                                              | ActionType.DELETE), self._gang_hint),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.ADD | ActionType.UPDATE),
                                 self._gang_hint),
        ]

    def _gang_hint(self, pod: dict[str, Any], old: Any, new: Any) -> QueueingHint:
        """QueueSkip while the pod's gang group is incomplete: the gang cache activates its
        members when a pod or PodGroup completes it, so other events (every bound pod, every
        PodGroup status write) would only re-run PreEnqueue on each held member again."""
        gang = self.cache.gang_of(pod)
        if gang is None or not gang.initialised or self.cache.group_complete(gang):
            return QueueingHint.QUEUE
        assert gang.params is not None
        if (gang.params.match_policy == GangMatchPolicy.ONCE_SATISFIED
                and self.cache.is_once_satisfied(gang)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # PreEnqueue / PreFilter --------------------------------------------------------------

    def basic_check(self, pod: PodInfo) -> Status | None:
        """Whether the pod's gang group may be scheduled at all (§9.2, steps 1-4)."""
        gang_id = get_gang_id(pod.pod)
        if not gang_id:
            return None
        pod_key = pod.key
        gang = self.cache.gang_of(pod.pod)
        if gang is None:
            return unresolvable(f"can't find gang, gangName: {gang_id}, podName: {pod_key}")
        if not gang.initialised:
            return unresolvable(f"gang has not init, gangName: {gang_id}, podName: {pod_key}")
        assert gang.params is not None
        if (gang.params.match_policy == GangMatchPolicy.ONCE_SATISFIED
                and self.cache.is_once_satisfied(gang)):
            return None
        missing: list[str] = []
        not_init: list[str] = []
        short: list[str] = []
        with self.cache.lock:
            for member_id, member in zip(gang.groups, self.cache.group_gangs(gang)):
                if member is None:
                    missing.append(member_id)
                elif not member.initialised:
                    not_init.append(member_id)
                elif len(member.children) < member.min_member:
                    short.append(f"{member_id} has {len(member.children)} of "
                                 f"{member.min_member} pods")
        failed = []
        if missing:
            failed.append(f"memberGangs [{' '.join(missing)}] doesn't exists")
        if not_init:
            failed.append(f"memberGangs [{' '.join(not_init)}] has not init")
        if short:
            failed.append(f"memberGangs [{' '.join(gang.groups)}] child pod not collect "
                          f"enough ({', '.join(short)})")
        if not failed:
            return None
        return unresolvable(f"gangGroup [{' '.join(gang.groups)}] basic check: "
                            f"{', '.join(failed)}, current gang: {gang_id}, "
                            f"podName: {pod_key}")

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        status = self.basic_check(pod)
        if status is not None:
            self._report_held(pod.uid, pod.pod, status.message(), event=True)
        else:
            self._drop_unsent_hold(pod.uid)
        return status

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        status = self.basic_check(pod)
        if status is not None:
            return None, status
        gang = self.cache.gang_of(pod.pod)
        if gang is None:
            return None, None
        ctx = self.context.of_group(gang.group_id)
        if ctx is None:
            self.context.open(gang.group_id, gang.groups, pod.key)
            return None, None
        ctx.attempted.add(pod.key)
        if ctx.failed_message:
            return None, unresolvable(ctx.failed_message)
        return None, None

    # NextPod -----------------------------------------------------------------------------

    def next_pod(self) -> str | None:
        """The next pending member of the group being scheduled not tried yet in its
        context; the context closes when none is left."""
        ctx = self.context.current
        if ctx is None:
            return None
        key = self.cache.first_pending(ctx.gangs, ctx.attempted)
        if key is not None:
            ctx.attempted.add(key)
            return key
        self.context.clear(REASON_ALL_PENDING_PODS_ATTEMPTED)
        return None

    def _report_held(self, uid: str, pod: dict[str, Any], message: str, *, event: bool) -> None:
        """Say on the pod (condition, and an event if asked) why it waits; once a message.

        A message not sent yet is replaced by a newer one: while a gang's pods arrive each
        add changes every held member's count, and sending each would cost the API server
        members² writes."""
        if self._reported.get(uid) == message:
            return
        self._reported[uid] = message
        with self._unsent_cond:
            earlier = self._unsent.get(uid)
            if earlier is None:
                due = time.monotonic() + (HOLD_REPORT_DELAY if event else 0.0)
                self._unsent[uid] = _UnsentReport(pod, message, event, due, event)
            else:
                earlier.pod, earlier.message, earlier.hold = pod, message, event
                earlier.event = earlier.event or event
        if earlier is None:
            self._reporter.submit(self._send_report, uid)

    def _drop_unsent_hold(self, uid: str) -> None:
        """The pod is no longer held: a hold report not sent yet would be stale (its gang's
        pods often all arrive within one informer list)."""
        with self._unsent_cond:
            unsent = self._unsent.get(uid)
            if unsent is not None and unsent.event:
                del self._unsent[uid]
                self._reported.pop(uid, None)
                self._unsent_cond.notify_all()

    def _send_report(self, uid: str) -> None:
        """Send the pod's report once due; a hold released meanwhile is never reported."""
        with self._unsent_cond:
            while True:
                unsent = self._unsent.get(uid)
                if unsent is None:
                    return
                left = unsent.due - time.monotonic()
                if left <= 0 or self._flushing:
                    break
                self._unsent_cond.wait(left)
            del self._unsent[uid]
        message = unsent.message
        if unsent.hold:
            # Held members are not asked again on each add to their gang (see
            # _refresh_holds): the count is taken now.
            status = self.basic_check(PodInfo(unsent.pod))
            if status is None:
                return
            message = status.message()
            self._reported[uid] = message
        self._report(unsent.pod, message, unsent.event)

    def _refresh_holds(self, pods: Sequence[dict[str, Any]]) -> None:
        """Members of a gang still incomplete after an add: the queue does not ask PreEnqueue
        again for each of them (members² work while a gang arrives); the hold reports already
        sent get the new count, those not sent yet take it when due."""
        for pod in pods:
            uid = str((pod.get("metadata") or {}).get("uid") or "")
            if uid not in self._reported:
                continue
            with self._unsent_cond:
                if uid in self._unsent:
                    continue
            status = self.basic_check(PodInfo(pod))
            if status is not None:
                self._report_held(uid, pod, status.message(), event=True)

    def _report(self, pod: dict[str, Any], message: str, event: bool) -> None:
        recorder, client = self.handle.recorder, self.handle.client
        if event and recorder is not None:
            recorder.eventf(pod, None, WARNING, "FailedScheduling", "Scheduling", "%s", message)
        if client is None:
            return
        meta = pod.get("metadata") or {}
        condition = {"type": "PodScheduled", "status": "False",
                     "reason": REASON_UNSCHEDULABLE, "message": message,
                     "lastProbeTime": None,
                     "lastTransitionTime": format_time(datetime.fromtimestamp(
                         self.handle.clock.now(), UTC))}
        try:
            client.patch(PODS, meta.get("name") or "", {"status": {"conditions": [condition]}},
                         meta.get("namespace"), patch_type="strategic",
                         subresource="status")
        except Exception as err:  # noqa: BLE001 - the pod may be gone; nothing to report then
            log.info("Reporting the gang hold of pod %s/%s failed: %s",
                     meta.get("namespace"), meta.get("name"), err)

    def forget_reported(self, uid: str) -> None:
        self._reported.pop(uid, None)

    def flush_reports(self) -> None:
        """Return once every held-pod report submitted so far went out."""
        with self._unsent_cond:
            self._flushing = True
            self._unsent_cond.notify_all()
        try:
            self._reporter.submit(lambda: None).result()
        finally:
            with self._unsent_cond:
                self._flushing = False

    # Why pending -------------------------------------------------------------------------

    def explain_pod(self, key: str) -> PodState | None:
        """The ``gang`` section of a pending gang pod's why-pending entry (PodStateExplainer)."""
        found = self.cache.find_pod(key)
        if found is None:
            return None
        gang, uid, pod = found
        if (pod.get("spec") or {}).get("nodeName"):
            return None
        held = self.basic_check(PodInfo(pod))
        with self.cache.lock:
            group_waiting = [u for g in self.cache.group_gangs(gang) if g is not None
                             for u in g.waiting]
            waiting = uid in gang.waiting
        waits = []
        for member in group_waiting:
            wp = self.handle.get_waiting_pod(member)
            deadline = wp.deadline(NAME) if wp is not None else None
            if wp is not None and deadline is not None:
                waits.append(gang_summary.PermitWait(wp.since, deadline))
        waited, left = gang_summary.permit_clock(waits, self.handle.clock.monotonic())
        where = gang_summary.PodStateInGang
        if held is not None:
            at, message = where.HELD, held.message()
        elif waiting:
            at, message = where.WAITING, "assumed on a node; waits for its group"
        else:  # its own last failed attempt, if any, is the entry's message
            at, message = where.QUEUED, ""
        state = gang_summary.GangPodState(key, at, message,
                                          gang_summary.summarize(self.cache, gang), waited, left)
        return PodState("gang", f"{at} by {NAME} (gang {gang.id})", state.to_dict(),
                        tuple(state.lines()))

    # PostFilter --------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        gang = self.cache.gang_of(pod.pod)
        if gang is None or gang.params is None:
            if get_gang_id(pod.pod):
                return None, unschedulable(f"Pod {pod.key!r} cannot find Gang "
                                           f"{get_gang_id(pod.pod)!r}")
            return self._preempt_alone(state, pod, statuses)
        if (gang.params.match_policy == GangMatchPolicy.ONCE_SATISFIED
                and self.cache.is_once_satisfied(gang)):
            return self._preempt_alone(state, pod, statuses)
        result: PostFilterResult | None = None
        preempted: Status | None = None
        if self.preemption is not None:
            result, preempted, _ = self.preemption.preempt(state, pod, statuses, gang)
        ctx = self.context.of_group(gang.group_id)
        if ctx is not None and ctx.failed_message:
            # The group already failed this round (this member was turned away at PreFilter
            # with that failure): its members keep the first message, not one quoting it.
            message = ctx.failed_message
        else:
            reason = FitError(pod.key, len(self.handle.snapshot.node_infos),
                              Diagnosis(node_to_status=statuses)).message()
            with self.cache.lock:
                waiting = sum(len(g.waiting) for g in self.cache.group_gangs(gang)
                              if g is not None)
            message = (f'GangGroup "{gang.group_id}" gets rejected due to member Pod '
                       f'"{pod.key}" is unschedulable with reason "{reason}", '
                       f'alreadyWaitForBound: {waiting}')
            if ctx is not None and gang.params.mode == GangMode.STRICT:
                ctx.failed_message = message
        with self.cache.lock:
            gangs = [g for g in self.cache.group_gangs(gang) if g is not None]
            # Members not tried yet learn why their group cannot go on
            # (GangPendingPodsConditionPatch, on by default).
            pending = [(uid, p) for g in gangs for uid, p in g.children.items()
                       if uid != pod.uid and uid not in g.waiting
                       and not (p.get("spec") or {}).get("nodeName")]
        for uid, p in pending:
            self._report_held(uid, p, message, event=False)
        if gang.params.mode == GangMode.STRICT:
            self._reject_group(gang, message, except_uid=pod.uid)
        if preempted is not None:
            return result, preempted
        if gang.params.mode != GangMode.STRICT:
            return None, unschedulable()
        return None, unschedulable(f'Gang "{gang.id}" gets rejected due to pod is '
                                   f'unschedulable')

    def _preempt_alone(self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
                       ) -> tuple[PostFilterResult | None, Status | None]:
        """Job preemption for ``pod`` alone (upstream's regular mode), when enabled."""
        if self.preemption is None:
            return None, unschedulable()
        result, status, _ = self.preemption.preempt(state, pod, statuses, None)
        return result, status

    def _reject_group(self, gang: Gang, message: str, except_uid: str = "") -> None:
        """Reject every waiting member of the gang's group (their Unreserve follows)."""
        with self.cache.lock:
            uids = [uid for g in self.cache.group_gangs(gang) if g is not None
                    for uid in g.waiting if uid != except_uid]
        with self._rejecting:
            for uid in uids:
                wp = self.handle.get_waiting_pod(uid)
                if wp is not None:
                    wp.reject(NAME, message)

    # PreScore / Score --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        # Score only orders nodes for network-topology gangs, which are not planned here.
        return Status(Code.SKIP)

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    # Reserve / Permit --------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if self.preemption is not None:
            gang = self.cache.gang_of(pod.pod)
            if gang is not None:
                self.preemption.attempted(gang, pod.uid)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        gang = self.cache.gang_of(pod.pod)
        if gang is None or gang.params is None:
            return
        with self.cache.lock:
            gang.waiting.discard(pod.uid)
            satisfied = (gang.params.match_policy == GangMatchPolicy.ONCE_SATISFIED
                         and gang.group_id in self.cache.once_satisfied)
        if satisfied or gang.params.mode != GangMode.STRICT:
            return
        self._reject_group(gang, f'Gang "{gang.id}" gets rejected due to Pod "{pod.name}" in '
                                 f'Unreserve')

    def permit(self, state: CycleState, pod: PodInfo,
               node_name: str) -> tuple[Status | None, float]:
        gang = self.cache.gang_of(pod.pod)
        if gang is None:
            if get_gang_id(pod.pod):
                return unschedulable("Gang not found"), 0.0
            return None, 0.0
        with self.cache.lock:
            gang.waiting.add(pod.uid)
            once = gang.group_id in self.cache.once_satisfied
            gangs = self.cache.group_gangs(gang)
            if not all(g is not None and g.valid_for_permit(once) for g in gangs):
                wait = gang.params.wait_time if gang.params is not None else \
                    self.args.default_timeout
                return Status(Code.WAIT), wait
            members = frozenset(uid for g in gangs if g is not None for uid in g.waiting)
            self.cache.binding_members[gang.group_id] = members
        if self.context.of_group(gang.group_id) is not None:
            self.context.clear(REASON_GANG_SUCCEEDED)
        for uid in members:
            wp = self.handle.get_waiting_pod(uid)
            if wp is not None:
                wp.allow(NAME)
        return None, 0.0

    # PreBind / PostBind ------------------------------------------------------------------

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        gang = self.cache.gang_of(pod.pod)
        client = self.handle.client
        if gang is None or client is None:
            return None
        with self.cache.lock:
            members = self.cache.binding_members.get(gang.group_id, frozenset())
        together = pod.uid in members and len(members) >= 2
        wanted = _bind_annotations(gang.group_id if together else None, len(members))
        current = annotations_of(pod.pod)
        patch = {k: v for k, v in wanted.items() if current.get(k) != v}
        if not patch:
            return None
        setting = {k: v for k, v in patch.items() if v is not None}
        if len(setting) == len(patch) and self.handle.defer_to_binding(state, setting):
            return None  # the binding sets them (a Binding can set annotations, not delete)
        try:
            client.patch(PODS, pod.name, {"metadata": {"annotations": patch}}, pod.namespace)
        except Exception as err:  # noqa: BLE001 - reported as the PreBind error
            return Status.as_error(err)
        return None

    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.cache.mark_bound(pod.pod)
        self.forget_reported(pod.uid)
