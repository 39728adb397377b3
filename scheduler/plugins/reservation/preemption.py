"""Preemption run by the Reservation plugin's PostFilter (``enablePreemption``).

Corresponds to upstream ``pkg/scheduler/plugins/reservation/preemption.go``
(``PreemptionMgr``, scheduler.md §7.10): DefaultPreemption's evaluator and policy with the
plugin's ``minCandidateNodesPercentage``/``minCandidateNodesAbsolute``, under the plugin's
name, where a victim must also be preemptible: pods labelled
``scheduling.koordinator.sh/disable-preemptible: "true"`` are never evicted (nor, as with
DefaultPreemption, reserve pods and pods of the preemptor's priority or higher).

Both pods and reserve pods preempt. A reserve pod has no ``status.nominatedNodeName`` (it
exists only in the scheduler): the node it was nominated to lives in the scheduler's
nominator only (other pods leave room for it there), which this policy asks when deciding
whether a reserve pod must wait for the victims it already evicts there. Its next attempt
filters every node rather than trying the nominated one first, and its Reservation shows
the attempt as Unschedulable until it lands.

What victims inside a Reservation free is accounted by the plugin's PreFilter extensions
(``Reservation.add_pod``/``remove_pod``), which the evaluator's dry runs call.
"""

from __future__ import annotations

from api.extension.preemption import is_pod_preemptible
from pkg.util.reservation import is_reserve_pod
from scheduler.apis.config import DefaultPreemptionArgs, ReservationArgs
from scheduler.framework.plugins.defaultpreemption import DefaultPreemption
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle


class ReservationPreemption(DefaultPreemption):
    """DefaultPreemption's policy for the Reservation plugin (not a plugin of the profile:
    the Reservation plugin's PostFilter runs its evaluator)."""

    name = "Reservation"

    def __init__(self, args: ReservationArgs, handle: ExtendedHandle) -> None:
        super().__init__(DefaultPreemptionArgs(
            min_candidate_nodes_percentage=args.min_candidate_nodes_percentage,
            min_candidate_nodes_absolute=args.min_candidate_nodes_absolute), handle)

    def is_eligible_pod(self, node_info: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        return is_pod_preemptible(victim.pod)

    def nominated_node_of(self, pod: PodInfo) -> str:
        if not is_reserve_pod(pod.pod):
            return super().nominated_node_of(pod)
        nominator = self.handle.nominator
        if nominator is None:
            return ""
        # Few nodes have nominated pods, and only a reserve pod's failed attempt asks.
        return next((node for node in nominator.nodes_with_nominated_pods()
                     if any(p.uid == pod.uid for p in nominator.nominated_pods_for_node(node))),
                    "")


__all__ = ["ReservationPreemption"]
