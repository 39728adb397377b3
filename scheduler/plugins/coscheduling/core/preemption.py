"""Job-level (gang) preemption: evict lower-priority pods only when every pending member of
the gang group fits afterwards, and nominate each member to its node.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/core/preemption.go``
(``preemptionEvaluatorImpl``: ``preempt``, ``jobEligibleToPreemptOthers``,
``nodesWherePreemptionMightHelp``, ``removePossibleVictims``, ``estimatePreemptionCost``,
``placeToSchedulePods``, ``selectVictims``/``sortVictims``, ``prepareCandidates``,
``makeNomination``/``cancelNomination``) and the ``preemptionMessage`` of its gang scheduling
context. Coscheduling's PostFilter calls it, with ``enablePreemption``, for a pod that fits
nowhere (the *trigger* pod). This module owns the algorithm and the per-round record; victims
are evicted with DefaultPreemption's ``evict_victim`` (DisruptionTarget condition, delete,
``Preempted`` event; a victim waiting at Permit is rejected instead).

One attempt:

1. a trigger pod with ``preemptionPolicy: Never`` is not eligible, nor a group whose pending
   member still has a victim terminating by preemption on its nominated node (unless, for the
   trigger pod, that node became UnschedulableAndUnresolvable); nor, unlike upstream, a trigger
   pod another plugin refused at PreFilter (``refused_at_pre_filter``: its ElasticQuota is used
   up; ElasticQuota's own PostFilter preempts within the quota);
2. candidate nodes are those the trigger pod found ``Unschedulable``; on a clone of each, every
   possible victim — strictly lower priority than the trigger pod, preemptible
   (``is_pod_preemptible``) and not quota non-preemptible — is removed;
3. the pending members (trigger pod first, then by key) are placed one by one, each on the
   cheapest feasible node (cost: per victim job, ``get_explanation_key``, the rank of its
   priority among all victims' priorities), each placement assumed for the next member;
4. if every member is placed, each node's victims are reprieved one by one in upstream's
   ``sortVictims`` order (higher priority, then job key, then name): a victim stays if the
   node's members all still fit with it; the rest are evicted, lower-priority nominations to
   those nodes are dropped, the other pending members are nominated (nominator and
   ``status.nominatedNodeName``), the group's waiting members are rejected so that the group
   comes back together, and the trigger pod's node is the PostFilter result (Success);
5. otherwise nothing is evicted: "0/N nodes are available: ..." (the FitError of the dry run),
   the members' nominations are cancelled and the waiting members rejected.

A *round* of a group starts with a preemption attempt and lasts until every other member that
was pending then has been attempted (reached Reserve or PostFilter): a member failing in the
same round does not preempt again but gets "preemption already attempted by <trigger> with
message <outcome>", as upstream's gang scheduling context.

The group's waiting members are rejected as ``JobPreemptionSuccessPlugin`` (they keep their
assumed node as nomination) or ``JobPreemptionFailurePlugin`` (nomination cleared), and waiting
victims as ``JobRejectPlugin`` (nomination untouched); ``frameworkext/nominating.py`` says what
the scheduler makes of each. While simulating, the pending members' own earlier nominations
do not count against each other (``make_nominated_pods_of_the_same_job``).

A pod without a gang (or of a gang already once satisfied) is preempted for alone, as
upstream's "regular mode": it is the only pending member and no round is kept.

Keeping pod-by-pod preemption away from gang pods is upstream's configuration, not code: the
chart's ``scheduler.enableJobPreemption`` (default true) sets this ``enablePreemption`` *and*
leaves DefaultPreemption out of the ``postFilter`` list, so job preemption is the scheduler's
only preemption for every pod (hence the regular mode). A configuration that keeps
DefaultPreemption runs both, in the ``postFilter`` order, as upstream would.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from api.extension.elastic_quota import is_pod_non_preemptible
from api.extension.objects import is_pod_terminated
from api.extension.preemption import is_pod_preemptible
from api.extension.schedule_explanation import get_explanation_key
from pkg.client.resources import PODS
from pkg.util.reservation import is_reserve_pod
from scheduler.diagnosis import Diagnosis, FitError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus, PostFilterResult
from scheduler.framework.plugins.defaultpreemption.evaluator import (
    SimulationError,
    clear_lower_priority_nominations,
    evict_victim,
    refused_at_pre_filter,
    simulate_add,
    simulate_remove,
    terminating_by_preemption,
)
from scheduler.framework.status import Code, Status, code_of, is_success, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.frameworkext.nominating import (
    JOB_PREEMPTION_FAILURE_PLUGIN,
    JOB_PREEMPTION_SUCCESS_PLUGIN,
    JOB_REJECT_PLUGIN,
    make_nominated_pods_of_the_same_job,
)
from scheduler.plugins.coscheduling.core.gang import Gang
from scheduler.plugins.coscheduling.core.gang_cache import GangCache

log = logging.getLogger(__name__)

REASON_ALREADY_PREEMPTED = "preemption already attempted by %s with message %s"
REASON_PREEMPTION_POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
REASON_TERMINATING_VICTIM_ON_NOMINATED_NODE = \
    "not eligible due to terminating pod on the nominated node."
REASON_NO_NODES_AVAILABLE = "no nodes available"
REASON_NO_POTENTIAL_VICTIMS = "no potential victims"
REASON_PREEMPTION_NOT_HELPFUL = "preemption not helpful"
# Ours (see ``refused_at_pre_filter``).
REASON_REFUSED_AT_PRE_FILTER = "preemption not helpful: %s refused the pod at PreFilter"
REASON_SELECT_VICTIMS_ON_NODE_ERROR = "select victims on node error"
REASON_PREPARE_CANDIDATES_ERROR = "prepare candidates error"
REASON_TRIGGER_POD_PREEMPT_SUCCESS = "preempt success, alreadyWaitingForBound: %d/%d"
PREEMPTION_NOT_HELPFUL_FOR_NODE = "Preemption is not helpful for scheduling"


@dataclass(slots=True)
class JobPreemptionState:
    """What one attempt found and decided (upstream ``JobPreemptionState``), for logs and
    tests. Pods are named ``namespace/name``."""

    trigger_pod_key: str
    preemptor_key: str = ""
    reason: str = ""
    message: str = ""
    pending_pods: list[str] = field(default_factory=list)
    waiting_pods: list[str] = field(default_factory=list)
    terminating_pod_on_nominated_node: dict[str, str] = field(default_factory=dict)
    possible_victims: dict[str, list[str]] = field(default_factory=dict)
    pod_to_nominated_node: dict[str, str] = field(default_factory=dict)
    victims: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class _Round:
    """The outcome of a group's last preemption attempt and the members not attempted since."""

    message: str
    remaining: set[str]


@dataclass(slots=True)
class _Placement:
    """Members placed on one node; ``node_info`` and ``state`` have the possible victims
    removed but not the members."""

    node_info: NodeInfo
    state: CycleState
    pods: list[PodInfo] = field(default_factory=list)




def sort_victims(victims: list[PodInfo]) -> None:
    """Upstream ``sortVictims``: higher priority first, then by job key, then by name."""
    victims.sort(key=lambda p: (-p.priority, get_explanation_key(p.labels), p.name))


def estimate_preemption_cost(possible_victims: dict[str, list[PodInfo]]) -> dict[str, int]:
    """Per node, the sum over its victims' jobs of the rank of the job's priority among all
    victims' priorities (a job counted once per node, by its first victim there)."""
    ranks = {p: i for i, p in enumerate(sorted({v.priority for vs in possible_victims.values()
                                                for v in vs}))}
    costs: dict[str, int] = {}
    for node, victims in possible_victims.items():
        jobs: set[str] = set()
        cost = 0
        for v in victims:
            job = get_explanation_key(v.labels)
            if job not in jobs:
                jobs.add(job)
                cost += ranks[v.priority]
        costs[node] = cost
    return costs


def _is_finished_or_deleting(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) or \
        is_pod_terminated(pod)


class JobPreemptionEvaluator:
    """Job-level preemption for the gang groups of one Coscheduling plugin."""

    def __init__(self, plugin_name: str, handle: ExtendedHandle, cache: GangCache) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.cache = cache
        self._lock = threading.Lock()
        self._rounds: dict[str, _Round] = {}  # gang group id → its current round

    # Rounds ------------------------------------------------------------------------------

    def attempted(self, gang: Gang, uid: str) -> None:
        """A member of ``gang``'s group was attempted (it reached Reserve)."""
        with self._lock:
            self._consume(gang.group_id, uid)

    def _consume(self, group_id: str, uid: str) -> _Round | None:
        """The group's round if ``uid`` was still to be attempted in it (then no longer)."""
        r = self._rounds.get(group_id)
        if r is None or uid not in r.remaining:
            return None
        r.remaining.discard(uid)
        if not r.remaining:
            del self._rounds[group_id]
        return r

    # Preempt -----------------------------------------------------------------------------

    def preempt(self, state: CycleState, pod: PodInfo, statuses: NodeToStatus,
                gang: Gang | None) -> tuple[PostFilterResult | None, Status, JobPreemptionState]:
        """(result, status, what was found) as upstream ``Preempt``, for ``gang``'s whole
        group, or for ``pod`` alone when ``gang`` is None:

        * (None, Unschedulable or Error): keep the nominations as they are;
        * (PostFilterResult(""), Unschedulable): preemption cannot help; nominations cancelled;
        * (PostFilterResult(node), Success): victims evicted; the trigger pod goes to ``node``.
        """
        if gang is None:
            ps = JobPreemptionState(trigger_pod_key=pod.key, preemptor_key=pod.key)
            result, status = self._run(state, pod, statuses, [pod], [], ps)
            return result, status, ps
        group_id = gang.group_id
        ps = JobPreemptionState(trigger_pod_key=pod.key, preemptor_key=group_id)
        with self._lock:
            r = self._consume(group_id, pod.uid)
            if r is not None:
                ps.reason, ps.message = REASON_ALREADY_PREEMPTED, r.message
                return None, Status(Code.UNSCHEDULABLE, r.message), ps
            self._rounds.pop(group_id, None)
        pending, waiting = self._members(gang, pod)
        try:
            result, status = self._run(state, pod, statuses, pending, waiting, ps)
        finally:
            message = REASON_ALREADY_PREEMPTED % (pod.key, ps.message or ps.reason)
            others = {p.uid for p in pending if p.uid != pod.uid}
            if others:
                with self._lock:
                    self._rounds[group_id] = _Round(message, others)
        return result, status, ps

    def _run(self, state: CycleState, pod: PodInfo, statuses: NodeToStatus,
             pending: list[PodInfo], waiting: list[PodInfo], ps: JobPreemptionState
             ) -> tuple[PostFilterResult | None, Status]:
        try:
            result, status = self._preempt(state, pod, statuses, pending, waiting, ps)
        finally:
            metrics = self.handle.metrics
            if metrics is not None:
                metrics.preemption_attempts.inc()
        log.info("Job preemption for %s triggered by %s: %s", ps.preemptor_key, pod.key,
                 ps.message or ps.reason)
        return result, status

    def _members(self, gang: Gang, pod: PodInfo) -> tuple[list[PodInfo], list[PodInfo]]:
        """(pending members, trigger pod first then by key; members waiting at Permit)."""
        pending: list[PodInfo] = []
        waiting: list[PodInfo] = []
        with self.cache.lock:
            for g in self.cache.group_gangs(gang):
                if g is None:
                    continue
                for uid, p in g.children.items():
                    if uid == pod.uid or (p.get("spec") or {}).get("nodeName") \
                            or _is_finished_or_deleting(p):
                        continue
                    (waiting if uid in g.waiting else pending).append(PodInfo(p))
        pending.sort(key=lambda p: p.key)
        waiting.sort(key=lambda p: p.key)
        return [pod, *pending], waiting

    def _preempt(self, state: CycleState, pod: PodInfo, statuses: NodeToStatus,
                 pending: list[PodInfo], waiting: list[PodInfo], ps: JobPreemptionState
                 ) -> tuple[PostFilterResult | None, Status]:
        ps.pending_pods = [p.key for p in pending]
        ps.waiting_pods = [p.key for p in waiting]
        ok, reason = self._job_eligible(pod, pending, statuses, ps)
        if not ok:
            ps.reason = reason
            return None, Status(Code.UNSCHEDULABLE, reason)
        refused_by = refused_at_pre_filter(statuses, self.plugin_name)
        if refused_by:  # its own PostFilter, later in the list, preempts where it helps
            ps.reason = REASON_REFUSED_AT_PRE_FILTER % refused_by
            return None, Status(Code.UNSCHEDULABLE, ps.reason)
        all_nodes = self.handle.snapshot.node_infos
        if not all_nodes:
            ps.reason = REASON_NO_NODES_AVAILABLE
            return None, Status(Code.ERROR, REASON_NO_NODES_AVAILABLE)
        make_nominated_pods_of_the_same_job(state, (p.uid for p in pending))
        try:
            placed, victims, node_statuses = self._dry_run(state, pod, pending, all_nodes,
                                                            statuses, ps)
        except SimulationError as err:
            ps.reason, ps.message = REASON_SELECT_VICTIMS_ON_NODE_ERROR, err.status.message()
            return None, Status(Code.ERROR, err.status.message(), error=err)
        if placed is None or victims is None:
            fit = FitError(pod.key, len(all_nodes), Diagnosis(node_to_status=node_statuses))
            ps.reason, ps.message = REASON_PREEMPTION_NOT_HELPFUL, fit.message()
            self._cancel_nomination(pod, pending, waiting, ps.message)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, ps.message)
        status = self._prepare_candidates(victims, pod, ps)
        if status is not None:
            ps.reason, ps.message = REASON_PREPARE_CANDIDATES_ERROR, status.message()
            return None, status
        ps.reason = REASON_TRIGGER_POD_PREEMPT_SUCCESS
        ps.message = REASON_TRIGGER_POD_PREEMPT_SUCCESS % (len(waiting),
                                                           len(pending) + len(waiting))
        self._make_nomination(pod, pending, waiting, placed, ps.message)
        return PostFilterResult(placed[pod.key]), Status(Code.SUCCESS)

    # Eligibility -------------------------------------------------------------------------

    def _is_preemption_allowed(self, victim: PodInfo, preemptor: PodInfo) -> bool:
        # A reserve pod (a Reservation, only in the scheduler) is never a victim.
        return (victim.priority < preemptor.priority and is_pod_preemptible(victim.pod)
                and not is_pod_non_preemptible(victim.pod) and not is_reserve_pod(victim.pod))

    def _job_eligible(self, trigger: PodInfo, pending: Sequence[PodInfo],
                      statuses: NodeToStatus, ps: JobPreemptionState) -> tuple[bool, str]:
        if trigger.spec.get("preemptionPolicy") == "Never":
            return False, REASON_PREEMPTION_POLICY_NEVER
        eligible = True
        for p in pending:
            nominated = (p.pod.get("status") or {}).get("nominatedNodeName") or ""
            if not nominated:
                continue
            if p.uid == trigger.uid and \
                    code_of(statuses.get(nominated)) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                # Filters now reject the nominated node for good: look for another one.
                continue
            ni = self.handle.snapshot.get(nominated)
            if ni is None:
                continue
            for v in ni.pods.values():
                if self._is_preemption_allowed(v, p) and terminating_by_preemption(v.pod):
                    ps.terminating_pod_on_nominated_node[v.key] = nominated
                    eligible = False
                    break
        return (True, "") if eligible else (False, REASON_TERMINATING_VICTIM_ON_NOMINATED_NODE)

    # Dry run -----------------------------------------------------------------------------



    def _dry_run(self, state: CycleState, trigger: PodInfo, pending: list[PodInfo],
                 all_nodes: Sequence[NodeInfo], statuses: NodeToStatus,
                 ps: JobPreemptionState
                 ) -> tuple[dict[str, str] | None, dict[str, list[PodInfo]] | None,
                            NodeToStatus]:
        """(member key → node, node → victims, the nodes' statuses); the first two are None
        when some member cannot be placed."""
        node_statuses = NodeToStatus()
        potential: list[NodeInfo] = []
        for ni in all_nodes:
            s = statuses.get(ni.name)
            if code_of(s) == Code.UNSCHEDULABLE:
                potential.append(ni.clone())
            else:
                node_statuses.statuses[ni.name] = unresolvable(PREEMPTION_NOT_HELPFUL_FOR_NODE)
        states = {ni.name: state.clone() for ni in potential}
        possible: dict[str, list[PodInfo]] = {}
        for ni in potential:
            on_node = [v for v in ni.pods.values() if self._is_preemption_allowed(v, trigger)]
            if not on_node:
                node_statuses.statuses[ni.name] = unresolvable(REASON_NO_POTENTIAL_VICTIMS)
                continue
            try:
                for v in on_node:
                    simulate_remove(self.handle, states[ni.name], trigger, v, ni)
            except SimulationError as err:
                node_statuses.statuses[ni.name] = err.status
            possible[ni.name] = on_node
        ps.possible_victims = {n: sorted(v.key for v in vs) for n, vs in possible.items()}
        if not possible:
            return None, None, node_statuses
        costs = estimate_preemption_cost(possible)
        placements = self._place(pending, potential, states, costs, node_statuses)
        if placements is None:
            return None, None, node_statuses
        placed = {p.key: node for node, pl in placements.items() for p in pl.pods}
        ps.pod_to_nominated_node = dict(placed)
        selected = {node: self._select_victims(possible.get(node, []), pl)
                    for node, pl in placements.items()}
        victims = {node: vs for node, vs in selected.items() if vs}
        ps.victims = {n: sorted(v.key for v in vs) for n, vs in victims.items()}
        return placed, victims, node_statuses

    def _place(self, pods: list[PodInfo], potential: list[NodeInfo],
               states: dict[str, CycleState], costs: dict[str, int],
               node_statuses: NodeToStatus) -> dict[str, _Placement] | None:
        """Each member on the cheapest feasible node (ties: by name), the ones before it
        assumed there; None when one fits nowhere."""
        fwk = self.handle
        feasible = sorted(potential, key=lambda ni: ni.name)
        assumed_nodes: dict[str, NodeInfo] = {}
        assumed_states: dict[str, CycleState] = {}
        placements: dict[str, _Placement] = {}
        for i, pod in enumerate(pods):
            fits: list[NodeInfo] = []
            for ni in feasible:
                status = fwk.run_filter_plugins_with_nominated_pods(
                    assumed_states.get(ni.name, states[ni.name]), pod,
                    assumed_nodes.get(ni.name, ni))
                if is_success(status):
                    fits.append(ni)
                else:
                    assert status is not None
                    node_statuses.statuses[ni.name] = status
            feasible = fits
            if not feasible:
                return None
            node = min(feasible, key=lambda ni: costs.get(ni.name, 0))
            if i + 1 < len(pods):
                if node.name not in assumed_nodes:
                    assumed_nodes[node.name] = node.clone()
                    assumed_states[node.name] = states[node.name].clone()
                try:
                    simulate_add(self.handle, assumed_states[node.name], pods[i + 1],
                                 pod.with_node(node.name), assumed_nodes[node.name])
                except SimulationError as err:
                    node_statuses.statuses[node.name] = err.status
                    return None
            placements.setdefault(node.name, _Placement(node, states[node.name])).pods.append(pod)
        return placements

    def _select_victims(self, possible: list[PodInfo], placement: _Placement) -> list[PodInfo]:
        """The victims on one node that must go: each possible victim, most important first,
        is added back if the node's members all still fit with it."""
        sort_victims(possible)
        victims: list[PodInfo] = []
        ni, state, pods = placement.node_info, placement.state, placement.pods
        for v in possible:
            simulate_add(self.handle, state, pods[0], v, ni)
            if self._members_fit(state, ni, pods):
                continue
            simulate_remove(self.handle, state, pods[0], v, ni)
            victims.append(v)
        return victims

    def _members_fit(self, state: CycleState, node_info: NodeInfo,
                     pods: list[PodInfo]) -> bool:
        ni, st = node_info.clone(), state.clone()
        for i, pod in enumerate(pods):
            if not is_success(self.handle.run_filter_plugins_with_nominated_pods(st, pod, ni)):
                return False
            if i + 1 < len(pods):
                simulate_add(self.handle, st, pods[i + 1], pod.with_node(ni.name), ni)
        return True

    # Acting on the decision --------------------------------------------------------------

    def _prepare_candidates(self, victims: dict[str, list[PodInfo]], trigger: PodInfo,
                            ps: JobPreemptionState) -> Status | None:
        """Evict the victims and drop lower-priority nominations to their nodes."""
        message = (f"{trigger.scheduler_name}: preempting to accommodate higher priority pods, "
                   f"preemptor: {ps.preemptor_key}, triggerPod: {trigger.key}")
        count = 0
        for node, pods in victims.items():
            for v in pods:
                count += 1
                if (v.pod.get("metadata") or {}).get("deletionTimestamp"):
                    continue  # graceful deletion already started
                try:
                    evict_victim(self.handle, JOB_REJECT_PLUGIN, node, trigger, v,
                                 message=message)
                except Exception as err:  # noqa: BLE001 - reported as the cycle's error
                    log.error("Preempting pod %s for %s failed: %s", v.key, trigger.key, err)
                    return Status.as_error(err, self.plugin_name)
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.preemption_victims.observe(count)
        for node in victims:
            clear_lower_priority_nominations(self.handle, node, trigger.priority)
        return None

    def _reject_waiting(self, waiting: Sequence[PodInfo], plugin: str, message: str) -> None:
        for p in waiting:
            wp = self.handle.get_waiting_pod(p.uid)
            if wp is not None:
                wp.reject(plugin, message)

    def _make_nomination(self, trigger: PodInfo, pending: Sequence[PodInfo],
                         waiting: Sequence[PodInfo], placed: dict[str, str],
                         message: str) -> None:
        self._reject_waiting(waiting, JOB_PREEMPTION_SUCCESS_PLUGIN, message)
        # The trigger pod is nominated by the scheduler, from the PostFilter result.
        for p in pending:
            if p.uid != trigger.uid:
                self._set_nominated_node(p, placed.get(p.key, ""))

    def _cancel_nomination(self, trigger: PodInfo, pending: Sequence[PodInfo],
                           waiting: Sequence[PodInfo], message: str) -> None:
        self._reject_waiting(waiting, JOB_PREEMPTION_FAILURE_PLUGIN, message)
        for p in pending:
            if p.uid != trigger.uid:
                self._set_nominated_node(p, "")

    def _set_nominated_node(self, pod: PodInfo, node: str) -> None:
        nominator = self.handle.nominator
        if nominator is not None:
            if node:
                nominator.add_nominated_pod(pod, node)
            else:
                nominator.delete_nominated_pod_if_exists(pod.pod)
        current = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
        client = self.handle.client
        if client is None or node == current:
            return
        try:
            client.patch(PODS, pod.name, {"status": {"nominatedNodeName": node or None}},
                         pod.namespace, patch_type="strategic", subresource="status")
        except Exception as err:  # noqa: BLE001 - the next attempt tries again
            log.warning("Setting 'NominatedNodeName' of pod %s to %r failed: %s", pod.key,
                        node, err)
