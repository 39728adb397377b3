"""NodeResourcesFit: does the node have room for the pod, and how full would it be?

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (``Fit``),
v1.35. PreFilter stores the pod's request (``fits.PodRequest``); Filter rejects nodes without
room for it (``fits``), vectorised over the snapshot in ``filter_nodes``; PreScore and Score
rate nodes with ``args.scoringStrategy`` (``strategies``) over its resources
(``resource_allocation``). Registered events: Pod Delete and UpdatePodScaleDown, Node Add and
UpdateNodeAllocatable, with the hints of ``fit_hints``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler.apis.config import NodeResourcesFitArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.plugins.noderesources.fit_hints import (
    is_schedulable_after_node_change,
    is_schedulable_after_pod_event,
)
from scheduler.framework.plugins.noderesources.fits import (
    PodRequest,
    compute_pod_request,
    describe,
    fits_mask,
    insufficient_resources,
)
from scheduler.framework.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
)
from scheduler.framework.plugins.noderesources.strategies import strategy_scorer
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name = NAME

    def __init__(self, args: NodeResourcesFitArgs | None, handle: ExtendedHandle) -> None:
        args = args if args is not None else NodeResourcesFitArgs()
        super().__init__(args, handle)
        self.args = args
        self.ignored_resources = frozenset(args.ignored_resources)
        self.ignored_resource_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.scorer = ResourceAllocationScorer([r.name for r in strategy.resources],
                                               strategy_scorer(strategy))

    def _pod_request(self, pod: PodInfo) -> PodRequest:
        memo = pod.memo.get(self.name)
        if memo is None:
            memo = pod.memo[self.name] = compute_pod_request(
                pod.requests, self.ignored_resources, self.ignored_resource_groups)
        return memo

    # PreFilter / Filter --------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, self._pod_request(pod))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        request = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            return Status.as_error(KeyError(
                f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'))
        missing = insufficient_resources(request, node_info)
        if not missing:
            return None
        code = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE if any(m.unresolvable for m in missing)
                else Code.UNSCHEDULABLE)
        return Status(code, *(m.reason for m in missing))

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        mask = fits_mask(state.read(PRE_FILTER_STATE_KEY), snapshot)
        return None if mask.all() else mask

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        request = state.get(PRE_FILTER_STATE_KEY)
        if request is None:
            return None
        return describe(insufficient_resources(request, node_info))

    # PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self.scorer.pod_requests(pod))
        return None

    def _score_requests(self, state: CycleState, pod: PodInfo) -> tuple[int, ...]:
        requests = state.get(PRE_SCORE_STATE_KEY)
        return requests if requests is not None else self.scorer.pod_requests(pod)

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        return self.scorer.score(node_info, self._score_requests(state, pod)), None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        return self.scorer.score_nodes(snapshot, idx, self._score_requests(state, pod)), None

    # Queueing ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                is_schedulable_after_pod_event),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                is_schedulable_after_node_change),
        ]
