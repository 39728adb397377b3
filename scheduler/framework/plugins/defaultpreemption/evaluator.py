"""The preemption evaluator: find nodes where evicting lower-priority pods makes room, pick
one, evict its victims.

Corresponds to kube-scheduler ``pkg/scheduler/framework/preemption`` (``Evaluator``,
``Preempt``, ``findCandidates``, ``DryRunPreemption``, ``SelectCandidate``,
``prepareCandidate``, ``PreemptPod``) with the synchronous preparation path. Policy — who may
preempt, which pods are victims, how many nodes to try — comes from a ``PreemptionPolicy``
(DefaultPreemption is one; Koordinator's Reservation and ElasticQuota plugins bring their own).

The dry run visits the nodes whose Filter status was Unschedulable, one at a time from the
policy's offset (a simulated node is a clone of its NodeInfo with a clone of the cycle state),
and stops once it has a candidate without PDB violations and as many candidates as the policy
asked for. Evicting a victim means: reject it if it is waiting at Permit; otherwise mark it
with the ``DisruptionTarget`` condition and delete it through the API; then a ``Preempted``
event on the victim.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from api.meta import format_timestamp
from pkg.client.errors import is_not_found
from pkg.client.resources import PODS
from pkg.events.events import NORMAL
from scheduler.diagnosis import Diagnosis, FitError
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import NodeToStatus, PostFilterResult
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Candidate,
    ScoreFunc,
    Victims,
    default_score_funcs,
    pick_one_node_for_preemption,
)
from scheduler.framework.plugins.defaultpreemption.ordering import importance_key
from scheduler.framework.plugins.defaultpreemption.pdb import (
    DisruptionBudget,
    budgets_of,
    filter_pods_with_pdb_violation,
    pdb_lister,
)
from scheduler.framework.status import Code, Status, is_success, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

log = logging.getLogger(__name__)

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


class PreemptionPolicy(Protocol):
    """What a preemption plugin decides (upstream ``preemption.Interface``)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where in the potential nodes to start, and how many candidates to look for."""
        ...

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> dict[str, Victims]: ...

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_node_status: Status | None) -> tuple[bool, str]:
        """(eligible, the reason when not)."""
        ...

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               budgets: list[DisruptionBudget]
                               ) -> tuple[list[PodInfo], int, Status | None]:
        """(victims most important first, PDB violations, status); ``state`` and
        ``node_info`` are this node's copies and may be changed."""
        ...

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]
                            ) -> list[ScoreFunc] | None:
        """Node preferences in order; None for upstream's defaults."""
        ...


def refused_at_pre_filter(statuses: NodeToStatus, plugin_name: str) -> str:
    """The plugin, other than ``plugin_name``, whose PreFilter refused the pod (Unschedulable)
    before any node was filtered; '' if none.

    Ours, not upstream's: a preemption dry run removes victims and re-runs only Filter, so for
    such a pod (its ElasticQuota used up) it picks victims that free nothing for it — another
    quota's pods on a full node. The refusing plugin's own PostFilter is the one that can help.
    """
    refused = statuses.absent
    if refused is None or statuses.statuses or refused.code != Code.UNSCHEDULABLE \
            or not refused.plugin or refused.plugin == plugin_name:
        return ""
    return refused.plugin


def terminating_by_preemption(pod: dict[str, Any]) -> bool:
    """Whether ``pod`` is being deleted because a scheduler preempted it."""
    if not (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == DISRUPTION_TARGET:
            return c.get("status") == "True" and c.get("reason") == PREEMPTION_BY_SCHEDULER
    return False


class SimulationError(Exception):
    """A PreFilter extension failed while pods were removed from or added to a NodeInfo copy
    during a preemption dry run."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def simulate_remove(handle: ExtendedHandle, state: CycleState, pod: PodInfo,
                    victim: PodInfo, node_info: NodeInfo) -> None:
    """Take ``victim`` off the ``node_info`` copy and tell the PreFilter extensions
    (``RemovePod``); raises SimulationError when one fails."""
    node_info.remove_pod(victim.key)
    status = handle.run_pre_filter_extension_remove_pod(state, pod, victim, node_info)
    if not is_success(status):
        assert status is not None
        raise SimulationError(status)


def simulate_add(handle: ExtendedHandle, state: CycleState, pod: PodInfo, to_add: PodInfo,
                 node_info: NodeInfo) -> None:
    """Put ``to_add`` on the ``node_info`` copy (a reprieved victim, or a member placed
    there) and tell the PreFilter extensions (``AddPod``); raises SimulationError."""
    node_info.add_pod(to_add)
    status = handle.run_pre_filter_extension_add_pod(state, pod, to_add, node_info)
    if not is_success(status):
        assert status is not None
        raise SimulationError(status)


def reprieve_victims(handle: ExtendedHandle, state: CycleState, pod: PodInfo,
                     node_info: NodeInfo, potential: list[PodInfo],
                     budgets: list[DisruptionBudget],
                     also_fits: Callable[[], bool] | None = None
                     ) -> tuple[list[PodInfo], int, Status | None]:
    """kube's SelectVictimsOnNode over the ``potential`` victims (already allowed): remove
    them all, check the pod fits, then put them back from the most important down (PDB
    violators first), keeping as victims those without which it does not fit, or with which
    ``also_fits`` (a plugin's own limit, e.g. a quota) says no. Returns the victims, how many
    of them violate a PDB, and a status when the pod does not fit even without them."""
    now = handle.clock.now()
    try:
        for p in potential:
            simulate_remove(handle, state, pod, p, node_info)
        # Affinity of the pod to a victim is not considered, as upstream: affinity to
        # lower-priority pods is not a recommended configuration.
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node_info)
        if not is_success(status):
            return [], 0, status
        potential.sort(key=lambda p: importance_key(p, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
        victims: list[PodInfo] = []
        num_violating = 0
        for group in (violating, non_violating):
            for p in group:
                simulate_add(handle, state, pod, p, node_info)
                fits = is_success(handle.run_filter_plugins_with_nominated_pods(
                    state, pod, node_info))
                if fits and (also_fits is None or also_fits()):
                    continue
                simulate_remove(handle, state, pod, p, node_info)
                victims.append(p)
                if group is violating and not fits:
                    num_violating += 1
    except SimulationError as err:
        return [], 0, Status(Code.ERROR, err.status.message(), error=err)
    if violating and non_violating:
        victims.sort(key=lambda p: importance_key(p, now))
    return victims, num_violating, None


class Evaluator:
    def __init__(self, plugin_name: str, handle: ExtendedHandle,
                 policy: PreemptionPolicy) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        # Registered now so that the informer factory starts it with the others.
        self.pdb_lister = pdb_lister(handle.informer_factory)

    def _now(self) -> float:
        return self.handle.clock.now()

    def post_filter(self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
                    ) -> tuple[PostFilterResult | None, Status | None]:
        """A preemption PostFilter: ``preempt``, counted in ``preemption_attempts``, its
        message prefixed ``preemption: `` as upstream's."""
        try:
            result, status = self.preempt(state, pod, statuses)
        finally:
            metrics = self.handle.metrics
            if metrics is not None:
                metrics.preemption_attempts.inc()
        if status is not None and status.message():
            return result, Status(status.code, "preemption: " + status.message(),
                                  error=status.error)
        return result, status

    def preempt(self, state: CycleState, pod: PodInfo,
                statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        """(result, status), as upstream:

        * (None, Unschedulable or Error): keep the pod's nominated node as it is;
        * (PostFilterResult(""), Unschedulable): preemption cannot help; clear the nomination;
        * (PostFilterResult(node), None): victims are being evicted; nominate ``node``.
        """
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName") or ""
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, statuses.get(nominated))
        if not ok:
            log.debug("Pod %s is not eligible for preemption: %s", pod.key, msg)
            return None, Status(Code.UNSCHEDULABLE, msg)
        refused_by = refused_at_pre_filter(statuses, self.plugin_name)
        if refused_by:
            return None, Status(Code.UNSCHEDULABLE,
                                f"not helpful: {refused_by} refused the pod at PreFilter")

        all_nodes = self.handle.snapshot.node_infos
        if not all_nodes:
            return None, Status(Code.ERROR, "no nodes available")
        candidates, node_statuses, errors = self.find_candidates(state, pod, all_nodes,
                                                                 statuses)
        if not candidates:
            if errors:
                return None, Status.as_error(errors[0])
            log.info("No preemption candidate is found; preemption is not helpful for "
                     "scheduling pod %s", pod.key)
            node_statuses.absent = unresolvable(PREEMPTION_NOT_HELPFUL)
            fit = FitError(pod.key, len(all_nodes), Diagnosis(node_to_status=node_statuses))
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, fit.message())

        best = self.select_candidate(candidates)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, "no candidate node for preemption")
        log.info("The target node for the preemption of pod %s is %s", pod.key, best.name)
        status = self.prepare_candidate(best, pod)
        if not is_success(status):
            return None, status
        return PostFilterResult(best.name), None

    def find_candidates(self, state: CycleState, pod: PodInfo, all_nodes: list[NodeInfo],
                        statuses: NodeToStatus
                        ) -> tuple[list[Candidate], NodeToStatus, list[BaseException]]:
        # Only Unschedulable nodes: UnschedulableAndUnresolvable ones stay unfit whatever
        # is evicted.
        potential = [ni for ni in all_nodes
                     if (s := statuses.get(ni.name)) is not None
                     and s.code == Code.UNSCHEDULABLE]
        if not potential:
            log.debug("Preemption will not help schedule pod %s on any node", pod.key)
            return [], NodeToStatus(), []
        budgets = budgets_of(self.pdb_lister.list()) if self.pdb_lister is not None else []
        offset, num = self.policy.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, budgets, offset, num)

    def dry_run_preemption(self, state: CycleState, pod: PodInfo, potential: list[NodeInfo],
                           budgets: list[DisruptionBudget], offset: int, num_candidates: int
                           ) -> tuple[list[Candidate], NodeToStatus, list[BaseException]]:
        """(candidates without PDB violations first, the other nodes' statuses, errors)."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        node_statuses = NodeToStatus()
        errors: list[BaseException] = []
        n = len(potential)
        for i in range(n):
            ni = potential[(offset + i) % n].clone()
            victims, violations, status = self.policy.select_victims_on_node(
                state.clone(), pod, ni, budgets)
            if is_success(status) and victims:
                bucket = violating if violations else non_violating
                if len(bucket) < num_candidates:
                    bucket.append(Candidate(ni.name, Victims(victims, violations)))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if is_success(status):
                status = Status.as_error(
                    RuntimeError(f"expected at least one victim pod on node {ni.name!r}"))
            assert status is not None
            if status.code == Code.ERROR:
                errors.append(status.error or RuntimeError(status.message()))
            node_statuses.statuses[ni.name] = status
        return non_violating + violating, node_statuses, errors

    def select_candidate(self, candidates: list[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        victims = self.policy.candidates_to_victims_map(candidates)
        funcs = self.policy.ordered_score_funcs(victims)
        if not funcs:
            funcs = default_score_funcs(victims, self._now())
        node = pick_one_node_for_preemption(victims, funcs)
        return Candidate(node, victims[node]) if node in victims else candidates[0]

    def prepare_candidate(self, c: Candidate, pod: PodInfo) -> Status | None:
        """Evict the victims and drop lower-priority nominations to the node."""
        for victim in c.victims.pods:
            if (victim.pod.get("metadata") or {}).get("deletionTimestamp"):
                # Graceful deletion already started: another call would change nothing.
                continue
            try:
                self.preempt_pod(c.name, pod, victim)
            except Exception as err:  # noqa: BLE001 - reported as the cycle's error
                log.error("Preempting pod %s for %s failed: %s", victim.key, pod.key, err)
                return Status.as_error(err, self.plugin_name)
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.preemption_victims.observe(len(c.victims.pods))
        self.clear_lower_priority_nominations(c.name, pod)
        return None

    def preempt_pod(self, node_name: str, preemptor: PodInfo, victim: PodInfo) -> None:
        """Evict one victim; raises on API errors other than NotFound."""
        evict_victim(self.handle, self.plugin_name, node_name, preemptor, victim)

    def clear_lower_priority_nominations(self, node_name: str, pod: PodInfo) -> None:
        clear_lower_priority_nominations(self.handle, node_name, pod.priority)


def evict_victim(handle: ExtendedHandle, plugin_name: str, node_name: str, preemptor: PodInfo,
                 victim: PodInfo, *, message: str = "") -> None:
    """Evict one victim: reject it if it waits at Permit, else mark it a DisruptionTarget
    (``message`` or upstream's default) and delete it; then a ``Preempted`` event. Raises on
    API errors other than NotFound. Shared by DefaultPreemption and job-level preemption."""
    waiting = handle.get_waiting_pod(victim.uid)
    if waiting is not None:
        waiting.reject(plugin_name, "preempted")
    elif not _delete_victim(handle, preemptor, victim, message):
        log.info("Victim pod %s of %s is already deleted", victim.key, preemptor.key)
        return
    recorder = handle.recorder
    if recorder is not None:
        recorder.eventf(victim.pod, preemptor.pod, NORMAL, "Preempted", "Preempting",
                        "Preempted by pod %s on node %s", preemptor.uid, node_name)


def _delete_victim(handle: ExtendedHandle, preemptor: PodInfo, victim: PodInfo,
                   message: str) -> bool:
    """Mark the victim a DisruptionTarget and delete it; False when it was gone."""
    client = handle.client
    if client is None:
        return True
    condition = {
        "type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
        "message": message or f"{preemptor.scheduler_name}: preempting to accommodate a "
                              f"higher priority pod",
    }
    current = next((c for c in (victim.pod.get("status") or {}).get("conditions") or ()
                    if c.get("type") == DISRUPTION_TARGET), None)
    try:
        if current is None or any(current.get(k) != v for k, v in condition.items()):
            condition["lastTransitionTime"] = format_timestamp(handle.clock.now())
            client.patch(PODS, victim.name, {"status": {"conditions": [condition]}},
                         victim.namespace, patch_type="strategic", subresource="status")
        client.delete(PODS, victim.name, victim.namespace)
    except Exception as err:
        if is_not_found(err):
            return False
        raise
    return True


def clear_lower_priority_nominations(handle: ExtendedHandle, node_name: str,
                                     priority: int) -> None:
    """Pods of lower priority than ``priority`` nominated to ``node_name`` may no longer fit
    there: drop their nomination so that they look for another node now rather than after
    the victims are gone."""
    nominator = handle.nominator
    if nominator is None:
        return
    client = handle.client
    for p in nominator.nominated_pods_for_node(node_name):
        if p.priority >= priority:
            continue
        nominator.delete_nominated_pod_if_exists(p.pod)
        if client is None or not (p.pod.get("status") or {}).get("nominatedNodeName"):
            continue
        try:
            client.patch(PODS, p.name, {"status": {"nominatedNodeName": None}},
                         p.namespace, patch_type="strategic", subresource="status")
        except Exception as err:  # noqa: BLE001 - not critical, as upstream
            log.warning("Cannot clear 'NominatedNodeName' of pod %s: %s", p.key, err)
