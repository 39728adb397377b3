"""PodTopologySpread: spread pods evenly over topology domains (zones, nodes, ...).

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/podtopologyspread`` (plugin.go),
v1.35 with SchedulerQueueingHints, NodeInclusionPolicyInPodTopologySpread and
MatchLabelKeysInPodTopologySpread on. DoNotSchedule constraints filter (PreFilter returns
Skip for a pod without any), ScheduleAnyway constraints score.

Args: ``defaultConstraints`` and ``defaultingType``. A pod without constraints of its own gets
the default ones (``System``: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway; or
the configured ``List``), spread by the selector of the Services selecting it and of its
controlling ReplicationController, ReplicaSet or StatefulSet, read from the shared informer
factory. Without a factory (or without such objects) default constraints do not apply.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.util.labels import InvalidSelectorError
from pkg.util.topologycounts import PodCounter
from scheduler.apis.config import PodTopologySpreadArgs
from scheduler.apis.config.kube_args import SYSTEM_DEFAULTING
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    NODE,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    PodUpdatingPreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from scheduler.framework.plugins.podtopologyspread import filtering, scoring
from scheduler.framework.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    NAME,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    filter_constraints,
    node_labels_match,
    pod_labels_match,
)
from scheduler.framework.plugins.podtopologyspread.defaults import Listers, default_selector
from scheduler.framework.plugins.podtopologyspread.filtering import PRE_FILTER_STATE_KEY
from scheduler.framework.plugins.podtopologyspread.inclusion import NodeInclusion
from scheduler.framework.plugins.podtopologyspread.scoring import PRE_SCORE_STATE_KEY
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, state_not_found
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

_KIND = {DO_NOT_SCHEDULE: "hard", SCHEDULE_ANYWAY: "soft"}
_NO_OWN_CONSTRAINTS: Mapping[str, tuple[Constraint, ...]] = {a: () for a in _KIND}



@dataclass(slots=True)
class _PodSpread:
    """What the plugin parses once per pod."""

    has_own_constraints: bool
    # action → the pod's own constraints of that action, or why they did not parse.
    own: Mapping[str, tuple[Constraint, ...] | str]
    # Read only for pods with constraints: parsed on first use.
    _inclusion: NodeInclusion | None = None

    def inclusion(self, pod: Mapping[str, Any]) -> NodeInclusion:
        if self._inclusion is None:
            self._inclusion = NodeInclusion.of(pod)
        return self._inclusion


def _own_constraints(raw: Sequence[Mapping[str, Any]], labels: Mapping[str, str],
                     action: str) -> tuple[Constraint, ...] | str:
    try:
        return filter_constraints(raw, labels, action)
    except InvalidSelectorError as err:
        return f"obtaining pod's {_KIND[action]} topology spread constraints: {err}"


def _parse_pod(pod: Mapping[str, Any]) -> _PodSpread:
    raw = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if not raw:
        return _PodSpread(False, _NO_OWN_CONSTRAINTS)
    return _PodSpread(True, {a: _own_constraints(raw, labels, a) for a in _KIND})


class PodTopologySpread(PodUpdatingPreFilterExtensions, PreFilterPlugin, FilterPlugin,
                        PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name = NAME
    pre_filter_state_key = PRE_FILTER_STATE_KEY
    has_normalize = True

    def __init__(self, args: PodTopologySpreadArgs | None, handle: ExtendedHandle) -> None:
        super().__init__(args, handle)
        args = args if args is not None else PodTopologySpreadArgs()
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        defaults: Sequence[Mapping[str, Any]] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted
            else [c.model_dump(by_alias=True, exclude_none=True)
                  for c in args.default_constraints])
        # Selectors come from the pod's Services and controller, never from the args.
        self.default_constraints = {a: filter_constraints(defaults, {}, a) for a in _KIND}
        factory = handle.informer_factory
        self.listers = Listers(factory) if defaults and factory is not None else None
        self._counter = PodCounter()

    def _spread(self, pod: PodInfo) -> _PodSpread:
        spread = pod.memo.get(NAME)
        if spread is None:
            spread = pod.memo[NAME] = _parse_pod(pod.pod)
        return spread

    def constraints(self, pod: Mapping[str, Any], spread: _PodSpread,
                    action: str) -> tuple[Constraint, ...] | str:
        """The pod's constraints of ``action``, or the defaults (getConstraints); a string
        says why they could not be read."""
        if spread.has_own_constraints:
            return spread.own[action]
        defaults = self.default_constraints[action]
        if not defaults or self.listers is None:
            return ()
        selector = default_selector(pod, self.listers)
        if not selector.requirements:
            return ()
        return tuple(c.with_selector(selector) for c in defaults)

    # PreFilter / Filter --------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        spread = self._spread(pod)
        constraints = self.constraints(pod.pod, spread, DO_NOT_SCHEDULE)
        if isinstance(constraints, str):
            return None, Status(Code.ERROR, f"get constraints from pod: {constraints}")
        if not constraints:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, filtering.pre_filter_state(
            snapshot, self._counter, pod, constraints, spread.inclusion(pod.pod)))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return state_not_found(PRE_FILTER_STATE_KEY)
        return filtering.check(s, pod, node_info)

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        mask = filtering.mask(state.read(PRE_FILTER_STATE_KEY), pod)
        return None if mask.all() else mask

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        return None if s is None else filtering.explain(s, pod, node_info)

    # PreScore / Score ----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = self.handle.snapshot
        if len(snapshot) == 0:
            return Status(Code.SKIP)
        spread = self._spread(pod)
        constraints = self.constraints(pod.pod, spread, SCHEDULE_ANYWAY)
        if isinstance(constraints, str):
            return Status(Code.ERROR, f"calculating preScoreState: {constraints}")
        if not constraints:
            return Status(Code.SKIP)
        # Only the system defaults spare nodes without every topology key (hostname
        # spreading still applies to nodes without a zone).
        require_all = spread.has_own_constraints or not self.system_defaulted
        state.write(PRE_SCORE_STATE_KEY, scoring.pre_score_state(
            snapshot, self._counter, pod, constraints, spread.inclusion(pod.pod), require_all,
            nodes))
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, state_not_found(PRE_SCORE_STATE_KEY)
        return scoring.score(s, node_info), None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return np.zeros(len(idx), dtype=np.int64), state_not_found(PRE_SCORE_STATE_KEY)
        return scoring.score_nodes(s, idx), None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if s is not None:
            scoring.normalize(s, scores)
        return None

    # Events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add/Delete: a matching pod more or less in some domain; UpdatePodLabel: a pod
            # now (no longer) matching; UpdatePodToleration: the pod's own new toleration
            # under nodeTaintsPolicy Honor.
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL
                             | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE),
                self.is_schedulable_after_pod_change),
            # Topology labels or taints changed, nodes came or went.
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE
                             | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change),
        ]

    def _hard_constraints(self, pod: dict[str, Any]) -> tuple[Constraint, ...] | None:
        constraints = self.constraints(pod, _parse_pod(pod), DO_NOT_SCHEDULE)
        return None if isinstance(constraints, str) else constraints

    def is_schedulable_after_pod_change(self, pod: dict[str, Any], old: Any,
                                        new: Any) -> QueueingHint:
        uid, namespace = _uid_namespace(pod)
        for p in (old, new):
            # Only the pod itself, or assigned pods of its namespace, change its spreading.
            if p is not None and _uid_namespace(p)[0] != uid and not (
                    (p.get("spec") or {}).get("nodeName")
                    and _uid_namespace(p)[1] == namespace):
                return QueueingHint.QUEUE_SKIP
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if (_uid_namespace(new)[0] == uid
                    and _tolerations(new) != _tolerations(old)
                    and any(c.node_taints_policy == HONOR for c in constraints)):
                return QueueingHint.QUEUE
            old_labels, new_labels = _labels(old), _labels(new)
            if old_labels == new_labels:
                return QueueingHint.QUEUE_SKIP
            changed = any(c.selector.matches(old_labels) != c.selector.matches(new_labels)
                          for c in constraints)
            return QueueingHint.QUEUE if changed else QueueingHint.QUEUE_SKIP
        changed_pod = new if new is not None else old
        return (QueueingHint.QUEUE if pod_labels_match(constraints, _labels(changed_pod))
                else QueueingHint.QUEUE_SKIP)

    def is_schedulable_after_node_change(self, pod: dict[str, Any], old: Any,
                                         new: Any) -> QueueingHint:
        constraints = self._hard_constraints(pod)
        if constraints is None:
            return QueueingHint.QUEUE
        old_match = old is not None and node_labels_match(_labels(old), constraints)
        new_match = new is not None and node_labels_match(_labels(new), constraints)
        if old is not None and new is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            old_labels, new_labels = _labels(old), _labels(new)
            if new_match and (
                    any(old_labels.get(c.topology_key) != new_labels.get(c.topology_key)
                        for c in constraints)
                    or _taints(old) != _taints(new)):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if (new_match if new is not None else old_match) else (
            QueueingHint.QUEUE_SKIP)


def _uid_namespace(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("uid", ""), meta.get("namespace", "")


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _tolerations(pod: Mapping[str, Any]) -> list[Any]:
    return (pod.get("spec") or {}).get("tolerations") or []


def _taints(node: Mapping[str, Any]) -> list[Any]:
    return (node.get("spec") or {}).get("taints") or []
