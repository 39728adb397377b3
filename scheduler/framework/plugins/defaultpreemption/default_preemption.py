"""DefaultPreemption: the PostFilter plugin that evicts lower-priority pods to make room.

Corresponds to kube-scheduler ``pkg/scheduler/framework/plugins/defaultpreemption``
(v1.35, synchronous preemption). The plugin is the policy of an ``Evaluator``:

* a pod with ``preemptionPolicy: Never`` never preempts, and a pod whose nominated node still
  has a victim terminating because of preemption waits for it (unless that node became
  UnschedulableAndUnresolvable);
* victims on a node are the pods of strictly lower priority, never a reserve pod (a
  Reservation, which exists only in the scheduler; ``is_eligible_pod`` may narrow
  that); all are removed, the pod must then fit, and they are reprieved one by one — those
  whose eviction would violate a PDB first, each group most important first — while it
  still fits;
* ``max(nodes × minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)`` candidates
  (at most all potential nodes) are looked for, from a random offset.

Its messages carry upstream's ``preemption: `` prefix.
"""

from __future__ import annotations

import random

from pkg.util.reservation import is_reserve_pod
from scheduler.apis.config import DefaultPreemptionArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import ClusterEventWithHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
)
from scheduler.framework.nominator import nominated_node_name
from scheduler.framework.plugins.defaultpreemption.candidate import (
    Candidate,
    ScoreFunc,
    Victims,
)
from scheduler.framework.plugins.defaultpreemption.evaluator import (
    Evaluator,
    reprieve_victims,
    terminating_by_preemption,
)
from scheduler.framework.plugins.defaultpreemption.pdb import (
    DisruptionBudget,
)
from scheduler.framework.status import Code, Status, code_of, unresolvable
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
        # A Reservation's reserve pod is no pod to delete (it exists only in the scheduler).
        return (victim.priority < preemptor.priority and not is_reserve_pod(victim.pod)
                and self.is_eligible_pod(node_info, victim, preemptor))

    def pod_eligible_to_preempt_others(self, pod: PodInfo,
                                       nominated_node_status: Status | None) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = self.nominated_node_of(pod)
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

    def nominated_node_of(self, pod: PodInfo) -> str:
        """The node an earlier preemption nominated the pod to ("" if none)."""
        return nominated_node_name(pod.pod)

    def select_victims_on_node(self, state: CycleState, pod: PodInfo, node_info: NodeInfo,
                               budgets: list[DisruptionBudget]
                               ) -> tuple[list[PodInfo], int, Status | None]:
        potential = [p for p in node_info.pods.values()
                     if self.is_preemption_allowed(node_info, p, pod)]
        if not potential:
            return [], 0, unresolvable(NO_VICTIMS)
        return reprieve_victims(self.handle, state, pod, node_info, potential, budgets)


