"""One scheduling decision: feasible nodes, scores, the chosen host, or a FitError.

Corresponds to kube-scheduler ``pkg/scheduler/schedule_one.go`` (``schedulePod``,
``findNodesThatFitPod``, ``numFeasibleNodesToFind``, ``prioritizeNodes``, ``selectHost``).
Filter plugins run over the whole snapshot as masks (``Framework.filter_masks``); the
feasible nodes taken are the first ``numFeasibleNodesToFind`` in rotating order from
``next_start_node_index``, which advances by the nodes examined, as upstream. Nodes with
nominated pods of equal or higher priority are re-checked with those pods counted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from scheduler.diagnosis import Diagnosis, FitError, NearestMiss, PluginRejections
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.runtime import Framework
from scheduler.framework.status import Code, Status, is_success
from scheduler.framework.types import PodInfo

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class SchedulingError(Exception):
    """A plugin failed with Error (not a fit problem): the pod goes to backoff."""

    def __init__(self, status: Status) -> None:
        self.status = status
        super().__init__(status.message())


class NoNodesAvailable(SchedulingError):
    def __init__(self) -> None:
        super().__init__(Status(Code.ERROR, "no nodes available to schedule pods"))


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int) -> int:
    """How many feasible nodes to look for before scoring (adaptive when percentage is 0)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    k = num_all_nodes * percentage // 100
    return max(k, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


class GenericScheduler:
    """Finds the host for one pod; keeps the rotating start index between cycles."""

    def __init__(self, percentage_of_nodes_to_score: int = 0,
                 rng: random.Random | None = None) -> None:
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.next_start_node_index = 0
        self._rng = rng or random.Random()

    def schedule(self, fwk: Framework, state: CycleState, pod: PodInfo) -> ScheduleResult:
        snap = fwk.snapshot
        if len(snap) == 0:
            raise NoNodesAvailable()
        feasible, diagnosis, evaluated = self.find_nodes_that_fit(fwk, state, pod)
        if len(feasible) == 0:
            raise FitError(pod.key, len(snap), diagnosis)
        if len(feasible) == 1:
            return ScheduleResult(snap.node_infos[int(feasible[0])].name, evaluated, 1)
        status = fwk.run_pre_score(state, pod, [snap.node_infos[i] for i in feasible])
        if not is_success(status):
            raise SchedulingError(status)  # type: ignore[arg-type]
        totals, status = fwk.run_score(state, pod, feasible)
        if not is_success(status):
            raise SchedulingError(status)  # type: ignore[arg-type]
        host = snap.node_infos[int(feasible[self._select(totals)])].name
        return ScheduleResult(host, evaluated, len(feasible))

    def _select(self, totals: np.ndarray) -> int:
        """Index of the highest total; ties broken uniformly at random, as selectHost."""
        best = np.flatnonzero(totals == totals.max())
        if len(best) == 1:
            return int(best[0])
        return int(best[self._rng.randrange(len(best))])

    def find_nodes_that_fit(self, fwk: Framework, state: CycleState,
                            pod: PodInfo) -> tuple[np.ndarray, Diagnosis, int]:
        """(feasible node indices, diagnosis, number of nodes evaluated)."""
        snap = fwk.snapshot
        diagnosis = Diagnosis()
        pre, status, restricting = fwk.run_pre_filter(state, pod)
        # The plugins that narrowed the nodes are among those that may make the pod fit later.
        diagnosis.unschedulable_plugins.update(restricting)
        if not is_success(status):
            assert status is not None
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.pre_filter_msg = status.message()
            diagnosis.node_to_status.absent = status
            if status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)
            return np.empty(0, dtype=np.int64), diagnosis, 0

        n = len(snap)
        allowed: np.ndarray | None = None
        if pre is not None and pre.node_names is not None:
            allowed = np.zeros(n, dtype=bool)
            for name in pre.node_names:
                i = snap.index.get(name)
                if i is not None:
                    allowed[i] = True

        # A pod nominated by an earlier preemption goes to that node if it still fits.
        nominated = (pod.pod.get("status") or {}).get("nominatedNodeName")
        if nominated:
            ni = snap.get(nominated)
            if ni is not None and (allowed is None or allowed[snap.index[nominated]]):
                if is_success(fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)):
                    return np.array([snap.index[nominated]], dtype=np.int64), diagnosis, 1

        masks = fwk.filter_masks(state, pod)
        feasible = allowed.copy() if allowed is not None else np.ones(n, dtype=bool)
        for _, m in masks:
            feasible &= m
        self._recheck_nominated(fwk, state, pod, feasible)

        candidates = n if allowed is None else int(allowed.sum())
        k = num_feasible_nodes_to_find(candidates, self.percentage_of_nodes_to_score)
        start = self.next_start_node_index % n
        rotated = np.flatnonzero(np.concatenate((feasible[start:], feasible[:start])))
        if len(rotated) > k:
            rotated = rotated[:k]
            examined_rotated = int(rotated[-1]) + 1
            if allowed is not None:
                order = np.concatenate((allowed[start:], allowed[:start]))
                examined = int(order[:examined_rotated].sum())
            else:
                examined = examined_rotated
        else:
            examined = candidates
        self.next_start_node_index = (start + examined) % n
        chosen = (rotated + start) % n
        if len(chosen) == 0:
            self._diagnose(fwk, state, pod, masks, allowed, restricting, diagnosis)
        return chosen, diagnosis, examined

    def _recheck_nominated(self, fwk: Framework, state: CycleState, pod: PodInfo,
                           feasible: np.ndarray) -> None:
        nominator = fwk.nominator
        if nominator is None:
            return
        snap = fwk.snapshot
        for node_name in nominator.nodes_with_nominated_pods():
            i = snap.index.get(node_name)
            if i is None or not feasible[i] or not fwk.nominated_pods_for(pod, node_name):
                continue
            if not is_success(fwk.run_filter_plugins_with_nominated_pods(
                    state, pod, snap.node_infos[i])):
                feasible[i] = False

    def _diagnose(self, fwk: Framework, state: CycleState, pod: PodInfo,
                  masks: list, allowed: np.ndarray | None, restricting: set[str],
                  diagnosis: Diagnosis) -> None:
        """Fill the diagnosis of a pod no node fits: statuses, per-plugin counts, nearest miss."""
        snap = fwk.snapshot
        n = len(snap)
        statuses = diagnosis.node_to_status.statuses
        if allowed is not None:
            outside = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                             f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(restricting))}]")
            for i in np.flatnonzero(~allowed):
                statuses[snap.node_infos[i].name] = outside
        failures = np.zeros(n, dtype=np.int64)
        first_failed = np.full(n, -1, dtype=np.int64)
        for j, (plugin, m) in enumerate(masks):
            rejected = ~m if allowed is None else (~m & allowed)
            failures += rejected
            first_failed[(first_failed < 0) & rejected] = j
            idx = np.flatnonzero(rejected)
            if len(idx) == 0:
                continue
            rej = diagnosis.plugin_rejections[plugin.name] = PluginRejections(nodes=len(idx))
            for i in idx:
                status = plugin.filter(state, pod, snap.node_infos[i])
                if status is None or status.code == Code.SUCCESS:
                    # Only a nominated pod made this node infeasible.
                    continue
                status.with_plugin(plugin.name)
                rej.reasons.update(status.reasons)
                if first_failed[i] == j:
                    statuses[snap.node_infos[i].name] = status
                    if status.code == Code.PENDING:
                        diagnosis.pending_plugins.add(plugin.name)
                    else:
                        diagnosis.unschedulable_plugins.add(plugin.name)
        # Nodes that passed every plugin mask but not the nominated-pods re-check.
        leftover = np.flatnonzero((first_failed < 0) if allowed is None
                                  else ((first_failed < 0) & allowed))
        for i in leftover:
            ni = snap.node_infos[i]
            status = fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if status is not None:
                statuses[ni.name] = status
                if status.plugin:
                    diagnosis.unschedulable_plugins.add(status.plugin)
        considered = np.flatnonzero(failures > 0) if allowed is None else np.flatnonzero(
            (failures > 0) & allowed)
        if len(considered) == 0:
            return
        best = int(considered[np.argmin(failures[considered])])
        ni = snap.node_infos[best]
        miss = NearestMiss(node=ni.name, failed_plugins=[])
        for plugin, m in masks:
            if m[best]:
                continue
            miss.failed_plugins.append(plugin.name)
            status = plugin.filter(state, pod, ni)
            miss.reasons[plugin.name] = list(status.reasons) if status is not None else []
            detail = plugin.explain(state, pod, ni)
            if detail:
                miss.details[plugin.name] = detail
        diagnosis.nearest_miss = miss

