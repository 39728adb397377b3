"""Preemption within a quota: the ElasticQuota plugin's policy for the preemption evaluator.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/preempt.go``. Differences from
DefaultPreemption (§8.6): every potential node is a candidate (no sampling, offset 0); a pod
may only evict pods of its own quota that are preemptible, of strictly lower priority, and
not in the default quota while ``disableDefaultQuotaPreemption``; a nominated node's
terminating lower-priority pod blocks a new preemption only when it is of the same quota; and
reprieving a victim keeps it a victim when its return would take the quota's used plus the
pod's request over the limit snapshotted at PreFilter.
"""

from __future__ import annotations

from collections.abc import Callable

from api.extension.elastic_quota import DEFAULT_QUOTA_NAME, is_pod_non_preemptible
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Candidate,
    ScoreFunc,
    Victims,
)
from scheduler.framework.plugins.defaultpreemption.default_preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
)
from scheduler.framework.plugins.defaultpreemption.evaluator import (
    SimulationError,
    simulate_add,
    simulate_remove,
)
from scheduler.framework.plugins.defaultpreemption.ordering import importance_key
from scheduler.framework.plugins.defaultpreemption.pdb import (
    DisruptionBudget,
    filter_pods_with_pdb_violation,
)
from scheduler.framework.status import Code, Status, is_success, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle
from scheduler.plugins.elasticquota.state import QuotaCycleState


class QuotaPreemption:
    """A ``PreemptionPolicy``; ``quota_of`` maps a pod to the quota it is charged to."""

    def __init__(self, handle: ExtendedHandle, quota_of: Callable[[PodInfo], str],
                 state_of: Callable[[CycleState], QuotaCycleState | None], *,
                 disable_default_quota_preemption: bool) -> None:
        self.handle = handle
        self._quota_of = quota_of
        self._state_of = state_of
        self._protect_default = disable_default_quota_preemption

    def can_preempt(self, pod: PodInfo, victim: PodInfo) -> bool:
        if is_pod_non_preemptible(victim.pod) or victim.priority >= pod.priority:
            return False
        quota = self._quota_of(victim)
        if self._protect_default and quota == DEFAULT_QUOTA_NAME:
            return False
        return quota == self._quota_of(pod)

    # PreemptionPolicy --------------------------------------------------------------------

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return 0, num_nodes

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]
                            ) -> list[ScoreFunc] | None:
        return None

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if not nominated:
            return True, ""
        if nominated_node_status is not None and \
                nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return True, ""
        ni = self.handle.snapshot.get(nominated)
        if ni is None:
            return True, ""
        quota = self._quota_of(pod)
        for p in ni.pods.values():
            if (p.pod.get("metadata") or {}).get("deletionTimestamp") and \
                    p.priority < pod.priority and self._quota_of(p) == quota:
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               budgets: list[DisruptionBudget]
                               ) -> tuple[list[PodInfo], int, Status | None]:
        potential = [p for p in node_info.pods.values() if self.can_preempt(pod, p)]
        if not potential:
            return [], 0, unresolvable(f"No victims found on node {node_info.name} for "
                                       f"preemptor pod {pod.name}")
        fwk = self.handle
        quota_state = self._state_of(state)
        try:
            for p in potential:
                simulate_remove(self.handle, state, pod, p, node_info)
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if not is_success(status):
                return [], 0, status
            now = fwk.clock.now()
            potential.sort(key=lambda p: importance_key(p, now))
            violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
            victims: list[PodInfo] = []
            num_violating = 0
            for group in (violating, non_violating):
                for p in group:
                    simulate_add(self.handle, state, pod, p, node_info)
                    fits = is_success(fwk.run_filter_plugins_with_nominated_pods(
                        state, pod, node_info))
                    if fits and (quota_state is None or quota_state.request_fits()):
                        continue
                    simulate_remove(self.handle, state, pod, p, node_info)
                    victims.append(p)
                    if group is violating and not fits:
                        num_violating += 1
        except SimulationError as err:
            return [], 0, Status(Code.ERROR, err.status.message(), error=err)
        return victims, num_violating, None




__all__ = ["QuotaPreemption"]
