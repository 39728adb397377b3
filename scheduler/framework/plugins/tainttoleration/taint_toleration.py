"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/tainttoleration``, v1.35 with
SchedulerQueueingHints on (TaintTolerationComparisonOperators, alpha, off):

* Filter: a NoSchedule or NoExecute taint no toleration tolerates rejects the node,
  UnschedulableAndUnresolvable, ``node(s) had untolerated taint {<key>: <value>}`` naming the
  first such taint.
* PreScore keeps the tolerations that cover PreferNoSchedule (that effect, or none); Score is
  the number of the node's PreferNoSchedule taints they leave untolerated, and NormalizeScore
  reverses it so the least-tainted nodes score 100. The default weight (3) is configuration's.
* Events: a node added or its taints changed (queued when that made the pod's taints all
  tolerated), and a pod's tolerations changed.

``filter_nodes`` and ``score_nodes`` answer once per distinct taint set (``taint_groups``),
memoised per toleration set; a cluster without such taints costs one memo lookup.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pkg.util.nodeaffinity import (
    DO_NOT_SCHEDULE_EFFECTS,
    PREFER_NO_SCHEDULE,
    find_untolerated_taint,
    tolerates,
)
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
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    default_normalize_score,
)
from scheduler.framework.plugins.tainttoleration.taint_groups import taint_groups
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_PREFER_NO_SCHEDULE = (PREFER_NO_SCHEDULE,)

Tolerations = tuple[Mapping[str, Any], ...]


def _no_pre_score_state() -> Status:
    return Status(Code.ERROR, f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')


def untolerated_taint_reason(taint: Mapping[str, Any]) -> str:
    return f"node(s) had untolerated taint {{{taint.get('key') or ''}: {taint.get('value') or ''}}}"


@dataclass(frozen=True, slots=True)
class _TolerationSet:
    """Tolerations and the key that stands for them in the snapshot memo."""

    tolerations: Tolerations
    signature: tuple[tuple[str, str, str, str], ...]

    @classmethod
    def of(cls, tolerations: Sequence[Mapping[str, Any]]) -> _TolerationSet:
        # tolerationSeconds does not change what is tolerated: left out of the key.
        sig = tuple(sorted({(t.get("key") or "", t.get("operator") or "Equal",
                             t.get("value") or "", t.get("effect") or "")
                            for t in tolerations}))
        return cls(tuple(tolerations), sig)

    def clone(self) -> _TolerationSet:
        return self


@dataclass(frozen=True, slots=True)
class _PodTolerations:
    all: _TolerationSet
    # Those with effect PreferNoSchedule or none (upstream getAllTolerationPreferNoSchedule).
    prefer_no_schedule: _TolerationSet


def _tolerations_of(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return (pod.get("spec") or {}).get("tolerations") or []


def _taints_of(node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return (node.get("spec") or {}).get("taints") or []


class TaintToleration(FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name = NAME
    has_normalize = True

    def _tolerations(self, pod: PodInfo) -> _PodTolerations:
        memo = pod.memo.get(NAME)
        if memo is None:
            tolerations = _tolerations_of(pod.pod)
            memo = pod.memo[NAME] = _PodTolerations(
                _TolerationSet.of(tolerations),
                _TolerationSet.of([t for t in tolerations
                                   if not t.get("effect")
                                   or t.get("effect") == PREFER_NO_SCHEDULE]))
        return memo

    # Filter ------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        taint = find_untolerated_taint(node_info.taints, self._tolerations(pod).all.tolerations,
                                       DO_NOT_SCHEDULE_EFFECTS)
        return None if taint is None else unresolvable(untolerated_taint_reason(taint))

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        groups = taint_groups(snapshot)
        if not groups.any_with(DO_NOT_SCHEDULE_EFFECTS):
            return None
        tols = self._tolerations(pod).all

        def passing() -> np.ndarray | None:
            mask = groups.tolerated(tols.tolerations, DO_NOT_SCHEDULE_EFFECTS)
            return None if mask.all() else mask

        return snapshot.memoized((NAME, "filter", tols.signature), passing)

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        tolerations = self._tolerations(pod).all.tolerations
        missed = [t for t in node_info.taints
                  if t.get("effect") in DO_NOT_SCHEDULE_EFFECTS and not tolerates(tolerations, t)]
        if not missed:
            return None
        return "untolerated taints: " + ", ".join(_taint_text(t) for t in missed)

    # Score -------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self._tolerations(pod).prefer_no_schedule)
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        tols = state.get(PRE_SCORE_STATE_KEY)
        if tols is None:
            return 0, _no_pre_score_state()
        count = sum(1 for t in node_info.taints
                    if t.get("effect") == PREFER_NO_SCHEDULE
                    and not tolerates(tols.tolerations, t))
        return count, None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        tols = state.get(PRE_SCORE_STATE_KEY)
        if tols is None:
            return np.zeros(len(idx), dtype=np.int64), _no_pre_score_state()
        groups = taint_groups(snapshot)
        if not groups.any_with(_PREFER_NO_SCHEDULE):
            return np.zeros(len(idx), dtype=np.int64), None
        counts = snapshot.memoized(
            (NAME, "score", tols.signature),
            lambda: groups.count_untolerated(tols.tolerations, _PREFER_NO_SCHEDULE))
        return counts[idx], None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, True, scores)
        return None

    # Events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                is_schedulable_after_node_change),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION),
                is_schedulable_after_pod_toleration_change),
        ]


def is_schedulable_after_node_change(pod: dict[str, Any], old_node: Any,
                                     new_node: Any) -> QueueingHint:
    """Queue when the node went from having an untolerated taint (or not existing) to not."""
    tolerations = _tolerations_of(pod)
    was_untolerated = old_node is None or find_untolerated_taint(
        _taints_of(old_node), tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
    is_untolerated = find_untolerated_taint(
        _taints_of(new_node), tolerations, DO_NOT_SCHEDULE_EFFECTS) is not None
    if was_untolerated and not is_untolerated:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_toleration_change(pod: dict[str, Any], old_pod: Any,
                                               new_pod: Any) -> QueueingHint:
    """Queue when this pod's tolerations changed (they can only be added)."""
    uid = (pod.get("metadata") or {}).get("uid")
    if (uid == (new_pod.get("metadata") or {}).get("uid")
            and len(_tolerations_of(old_pod)) != len(_tolerations_of(new_pod))):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def _taint_text(taint: Mapping[str, Any]) -> str:
    # kubectl's form: key=value:Effect (no "=" without a value).
    value = taint.get("value")
    text = taint.get("key") or ""
    return f"{text}={value}:{taint.get('effect')}" if value else f"{text}:{taint.get('effect')}"
