"""NodeAffinity: place pods on nodes their nodeSelector and node affinity accept or prefer.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/nodeaffinity``, v1.35 with
SchedulerQueueingHints on:

* PreFilter: Skip for a pod without ``spec.nodeSelector`` and required node affinity when no
  ``addedAffinity`` is required either. When every required term names nodes with
  ``matchFields metadata.name In``, the result is those nodes (``pod affinity terms
  conflict``, UnschedulableAndUnresolvable, when that is none).
* Filter, UnschedulableAndUnresolvable: ``node(s) didn't match scheduler-enforced node
  affinity`` for the args' ``addedAffinity`` (checked first), ``node(s) didn't match Pod's node
  affinity/selector`` for the pod's own. Terms of the pod's that do not parse are ignored.
* PreScore/Score: the summed weights of the preferred terms (the pod's and addedAffinity's) a
  node matches; Skip when neither has any. NormalizeScore scales to 0..100 (not reversed).
* Events: a node added or its labels changed, queued when that made it match.

``filter_nodes`` and ``score_nodes`` evaluate each selector once over label columns
(``columns``), memoised per selector, so pods with the same affinity share the work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from pkg.util.labels import IN
from pkg.util.nodeaffinity import (
    OBJECT_NAME_FIELD,
    InvalidSelectorError,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    preferred_node_affinity,
)
from scheduler.apis.config import NodeAffinityArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from scheduler.framework.events import QueueingHint as Hint
from scheduler.framework.interface import (
    MAX_NODE_SCORE,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    default_normalize_score,
)
from scheduler.framework.plugins.nodeaffinity.columns import (
    preferred_scores,
    required_mask,
    selector_mask,
)
from scheduler.framework.plugins.nodeaffinity.explain import explain_required, explain_selector
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unresolvable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import ExtendedHandle

NAME = "NodeAffinity"
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
T = TypeVar("T")


def required_node_names(terms: Sequence[Mapping[str, Any]]) -> frozenset[str] | None:
    """The nodes the required terms name, None when some term does not restrict the name.

    A term restricts it with ``matchFields metadata.name In`` (several intersect); terms are
    ORed, so their nodes are united.
    """
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for r in term.get("matchFields") or ():
            if r.get("key") == OBJECT_NAME_FIELD and r.get("operator") == IN:
                values = set(r.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class _PodAffinity:
    """What the plugin reads from a pod, parsed once (``pod.memo``)."""

    # None: no nodeSelector and no required affinity (every node matches).
    required: RequiredNodeAffinity | None
    # PreFilter's node names (None: all nodes).
    node_names: frozenset[str] | None
    preferred: PreferredSchedulingTerms | None
    preferred_error: InvalidSelectorError | None


def _parse_pod(pod: PodInfo) -> _PodAffinity:
    node_affinity = pod.affinity.get("nodeAffinity") or {}
    required_terms = node_affinity.get(_REQUIRED)
    required = None
    node_names = None
    if required_terms is not None or pod.spec.get("nodeSelector"):
        required = RequiredNodeAffinity.from_pod(pod.pod)
    if required_terms is not None:
        terms = required_terms.get("nodeSelectorTerms") or []
        node_names = required_node_names(terms) if terms else None
    try:
        return _PodAffinity(required, node_names, preferred_node_affinity(pod.pod), None)
    except InvalidSelectorError as err:
        return _PodAffinity(required, node_names, None, err)


def _parse_added(field: str, parse: Callable[[Any], T], value: Any) -> T:
    try:
        return parse(value)
    except InvalidSelectorError as err:
        raise InvalidSelectorError(f"parsing addedAffinity.{field}: {err}") from None


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin,
                   EnqueueExtensions):
    name = NAME
    has_normalize = True

    def __init__(self, args: NodeAffinityArgs | None, handle: ExtendedHandle) -> None:
        super().__init__(args, handle)
        added_affinity = args.added_affinity if args is not None else None
        added = added_affinity.to_dict() if added_affinity is not None else {}
        required = added.get(_REQUIRED)
        self.added_node_selector: NodeSelector | None = None if required is None else (
            _parse_added(_REQUIRED, NodeSelector.parse, required))
        preferred = added.get(_PREFERRED)
        self.added_preferred: PreferredSchedulingTerms | None = _parse_added(
            _PREFERRED, PreferredSchedulingTerms.parse, preferred) if preferred else None

    def _pod(self, pod: PodInfo) -> _PodAffinity:
        memo = pod.memo.get(NAME)
        if memo is None:
            memo = pod.memo[NAME] = _parse_pod(pod)
        return memo

    # PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        parsed = self._pod(pod)
        if parsed.required is None and self.added_node_selector is None:
            return None, Status(Code.SKIP)
        if parsed.node_names is None:
            return None, None
        if not parsed.node_names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(set(parsed.node_names)), None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        labels, name = node_info.labels, node_info.name
        if self.added_node_selector is not None and not self.added_node_selector.matches(
                labels, name):
            return unresolvable(ERR_REASON_ENFORCED)
        required = self._pod(pod).required
        if required is not None and not required.matches(labels, name):
            return unresolvable(ERR_REASON_POD)
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        masks = []
        if self.added_node_selector is not None:
            masks.append(selector_mask(snapshot, self.added_node_selector))
        required = self._pod(pod).required
        if required is not None:
            masks.append(required_mask(snapshot, required))
        if not masks:
            return None
        mask = masks[0] if len(masks) == 1 else masks[0] & masks[1]
        return None if mask.all() else mask

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        labels, name = node_info.labels, node_info.name
        parts = []
        added = self.added_node_selector
        if added is not None and not added.matches(labels, name):
            parts.append("scheduler-enforced affinity: " + explain_selector(added, labels, name))
        required = self._pod(pod).required
        missed = None if required is None else explain_required(required, labels, name)
        if missed:
            parts.append(missed)
        return "; ".join(parts) or None

    # PreScore / Score --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        parsed = self._pod(pod)
        if parsed.preferred_error is not None:
            return Status.as_error(parsed.preferred_error)
        if parsed.preferred is None and self.added_preferred is None:
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        parsed = self._pod(pod)
        if parsed.preferred_error is not None:
            return 0, Status.as_error(parsed.preferred_error)
        labels, name = node_info.labels, node_info.name
        count = 0
        if self.added_preferred is not None:
            count += self.added_preferred.score(labels, name)
        if parsed.preferred is not None:
            count += parsed.preferred.score(labels, name)
        return count, None

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        parsed = self._pod(pod)
        out = np.zeros(len(idx), dtype=np.int64)
        if parsed.preferred_error is not None:
            return out, Status.as_error(parsed.preferred_error)
        for terms in (self.added_preferred, parsed.preferred):
            if terms is not None and terms.terms:
                out += preferred_scores(snapshot, terms)[idx]
        return out, None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    # Events ------------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(
            ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
            self.is_schedulable_after_node_change)]

    def is_schedulable_after_node_change(self, pod: dict[str, Any], old_node: Any,
                                         new_node: Any) -> Hint:
        """Queue when the node (new, or newly labelled) now matches the pod's affinity."""
        if self.added_node_selector is not None and not self.added_node_selector.matches_node(
                new_node):
            return Hint.QUEUE_SKIP
        required = RequiredNodeAffinity.from_pod(pod)
        if not required.matches_node(new_node):
            return Hint.QUEUE_SKIP
        if old_node is None or not required.matches_node(old_node):
            return Hint.QUEUE
        return Hint.QUEUE_SKIP
