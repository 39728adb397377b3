"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods to make room.

Corresponds to kube-scheduler ``pkg/scheduler/framework/plugins/defaultpreemption``
(v1.35, synchronous preemption). The plugin is the policy of an ``Evaluator``:

* a pod with ``preemptionPolicy: Never`` never preempts, and a pod whose nominated node still
  has a victim terminating because of preemption waits for it (unless that node became
  UnschedulableAndUnresolvable);
* victims on a node are the pods of strictly lower priority (``is_eligible_pod`` may narrow
  that); all are removed, the pod must then fit, and they are reprieved one by one — those
  whose eviction would violate a PDB first, each group most important first — while it
  still fits;
* ``max(nodes × minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)`` candidates
  (at most all potential nodes) are looked for, from a random offset.

Its messages carry upstream's ``preemption: `` prefix.
"""

from __future__ import annotations

import random

from scheduler.apis.config import DefaultPreemptionArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
)
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Candidate,
    ScoreFunc,
    Victims,
)
from scheduler.framework.plugins.defaultpreemption.evaluator import (
    Evaluator,
    SimulationError,
    simulate_add,
    simulate_remove,
    terminating_by_preemption,
)
from scheduler.framework.plugins.defaultpreemption.ordering import importance_key
from scheduler.framework.plugins.defaultpreemption.pdb import (
    DisruptionBudget,
    filter_pods_with_pdb_violation,
)
from scheduler.framework.status import Code, Status, code_of, is_success, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."




class DefaultPreemption(PostFilterPlugin, EnqueueExtensions):
    name = "DefaultPreemption"

    def __init__(self, args: DefaultPreemptionArgs | None, handle: ExtendedHandle, *,
                 rng: random.Random | None = None) -> None:
        args = args if args is not None else DefaultPreemptionArgs()
        errors = args.validate_args()
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        super().__init__(args, handle)
        self.args = args
        self.rng = rng or random.Random()
        self.evaluator = Evaluator(self.name, handle, self)

    # PostFilter ------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        return self.evaluator.post_filter(state, pod, statuses)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Synchronous preemption rejects no pod at PreEnqueue, so no event concerns it.
        return []

    # Policy (upstream preemption.Interface) --------------------------------------------

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        return min(max(n, self.args.min_candidate_nodes_absolute), num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def candidates_to_victims_map(self, candidates: list[Candidate]) -> dict[str, Victims]:
        return {c.name: c.victims for c in candidates}

    def ordered_score_funcs(self, nodes_to_victims: dict[str, Victims]
                            ) -> list[ScoreFunc] | None:
        return None

    def is_eligible_pod(self, node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        """Extra victim filtering beyond lower priority; none by default."""
        return True

    def is_preemption_allowed(self, node_info: NodeInfo, victim: PodInfo,
                              preemptor: PodInfo) -> bool:
        return (victim.priority < preemptor.priority
                and self.is_eligible_pod(node_info, victim, preemptor))

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if nominated:
            # A nominated node that filters now reject for good frees the pod to try again.
            if code_of(nominated_node_status) == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            ni = self.handle.snapshot.get(nominated)
            if ni is not None:
                for p in ni.pods.values():
                    if self.is_preemption_allowed(ni, p, pod) and \
                            terminating_by_preemption(p.pod):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               budgets: list[DisruptionBudget]
                               ) -> tuple[list[PodInfo], int, Status | None]:
        fwk = self.handle
        potential = [p for p in node_info.pods.values()
                     if self.is_preemption_allowed(node_info, p, pod)]
        if not potential:
            return [], 0, unresolvable(NO_VICTIMS)
        now = fwk.clock.now()
        try:
            for p in potential:
                simulate_remove(self.handle, state, pod, p, node_info)
            # Affinity of the pod to a victim is not considered, as upstream: affinity to
            # lower-priority pods is not a recommended configuration.
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node_info)
            if not is_success(status):
                return [], 0, status
            potential.sort(key=lambda p: importance_key(p, now))
            violating, non_violating = filter_pods_with_pdb_violation(potential, budgets)
            victims: list[PodInfo] = []
            num_violating = 0
            for group in (violating, non_violating):
                for p in group:
                    simulate_add(self.handle, state, pod, p, node_info)
                    if is_success(fwk.run_filter_plugins_with_nominated_pods(
                            state, pod, node_info)):
                        continue
                    simulate_remove(self.handle, state, pod, p, node_info)
                    victims.append(p)
                    if group is violating:
                        num_violating += 1
        except SimulationError as err:
            return [], 0, Status(Code.ERROR, err.status.message(), error=err)
        if violating and non_violating:
            victims.sort(key=lambda p: importance_key(p, now))
        return victims, num_violating, None


