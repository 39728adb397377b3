"""PodTopologySpread's PreScore state, Score and NormalizeScore (ScheduleAnyway constraints).

Corresponds to kube-scheduler ``plugins/podtopologyspread/scoring.go`` (v1.35):

* Nodes scored that lack a constraint's topology key are ignored (score 0) unless the
  constraints are the system defaults, which need not all be present.
* Per constraint, the matching pods of each domain are counted over every node of the
  cluster (eligible as in Filter); a hostname constraint counts the node's own pods instead.
* Score = round(sum over the node's constraints of count × log(size + 2) + (maxSkew − 1)),
  ``size`` being the number of domains among the scored nodes (for hostname: the number of
  scored nodes not ignored).
* NormalizeScore: 100 × (max + min − score) / max, so the emptiest domains score 100; all
  100 when max is 0; ignored nodes 0.

The sizes depend on the scored nodes; they are worked out where those nodes are known as
indices (``score_nodes``), or from the NodeInfos PreScore got for the single-node Score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pkg.util.topologycounts import DomainCounts, PodCounter
from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.plugins.nodeaffinity.columns import label_column
from scheduler.framework.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    NAME,
    Constraint,
    is_terminating,
    node_labels_match,
)
from scheduler.framework.plugins.podtopologyspread.filtering import count_matching
from scheduler.framework.plugins.podtopologyspread.inclusion import NodeInclusion
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.types import NodeInfo, PodInfo

PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class _Column:
    codes: np.ndarray
    index: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class _Sizes:
    """What depends on the scored nodes: which are ignored, and each constraint's weight."""

    ignored: np.ndarray  # aligned with the scored nodes
    weights: tuple[float, ...]


@dataclass(slots=True)
class PreScoreState:
    constraints: tuple[Constraint, ...]
    namespace: str
    require_all_topologies: bool
    # The nodes PreScore was given (for the single-node Score and NormalizeScore).
    filtered: Sequence[NodeInfo]
    # Per constraint: matching pods per domain over all nodes (None for hostname).
    counts: list[DomainCounts | None]
    # Per constraint with the hostname key: matching pods on each node of the snapshot.
    per_node: list[np.ndarray | None]
    # Per constraint: each snapshot node's domain code, -1 without the label.
    codes: list[np.ndarray]
    has_all: np.ndarray
    sizes: _Sizes | None = field(default=None)

    def clone(self) -> PreScoreState:
        # Nothing in it changes after PreScore but the sizes cache (upstream shares it too).
        return self


def topology_normalizing_weight(size: int) -> float:
    return math.log(size + 2)


def _round(x: float) -> int:
    """Go's math.Round for a non-negative score: halves away from zero."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole


def pre_score_state(snapshot: Snapshot, counter: PodCounter, pod: PodInfo,
                    constraints: Sequence[Constraint], inclusion: NodeInclusion,
                    require_all_topologies: bool,
                    filtered: Sequence[NodeInfo]) -> PreScoreState:
    columns = [label_column(snapshot, c.topology_key) for c in constraints]
    has_all = np.ones(len(snapshot.node_infos), dtype=bool)
    for col in columns:
        has_all &= col.codes >= 0
    counts: list[DomainCounts | None] = []
    per_node: list[np.ndarray | None] = []
    for c, col in zip(constraints, columns, strict=True):
        matching = count_matching(snapshot, counter, pod.namespace, c)
        if c.topology_key == LABEL_HOSTNAME:
            counts.append(None)
            per_node.append(np.zeros(len(has_all), dtype=np.int64) if matching is None
                            else matching)
            continue
        per_node.append(None)
        codes = col.codes
        if not require_all_topologies:
            # A node without the key counts in the domain "" (upstream reads a missing label
            # as ""), which only a node labelled "" can read.
            codes = np.where(codes >= 0, codes, col.index.get("", -1))
        included = inclusion.mask(c, snapshot)
        eligible = has_all if require_all_topologies else None
        if included is not None:
            eligible = included if eligible is None else eligible & included
        counts.append(DomainCounts.summed(_Column(codes, col.index), matching, eligible))
    return PreScoreState(tuple(constraints), pod.namespace, require_all_topologies, filtered,
                         counts, per_node, [col.codes for col in columns], has_all)


def _sizes_of(s: PreScoreState, codes: Sequence[np.ndarray], ignored: np.ndarray) -> _Sizes:
    """``codes[i]``: the scored nodes' codes of constraint i (-1 without the label)."""
    kept = ~ignored
    weights = []
    for c, counts, node_codes in zip(s.constraints, s.counts, codes, strict=True):
        if c.topology_key == LABEL_HOSTNAME:
            size = int(kept.sum())
        else:
            assert counts is not None
            on = node_codes[kept]
            labelled = on[on >= 0]
            size = int(np.count_nonzero(np.bincount(labelled, minlength=len(counts.index))))
            empty = counts.index.get("")
            if len(labelled) < len(on) and (empty is None or not (labelled == empty).any()):
                size += 1  # the "" domain of the nodes without the key
        weights.append(topology_normalizing_weight(size))
    return _Sizes(ignored, tuple(weights))


def _sizes_for_filtered(s: PreScoreState) -> _Sizes:
    """The sizes for the NodeInfos PreScore was given, read from their labels."""
    if s.sizes is None:
        labels = [ni.labels for ni in s.filtered]
        ignored = np.fromiter((s.require_all_topologies
                               and not node_labels_match(lb, s.constraints) for lb in labels),
                              dtype=bool, count=len(labels))
        codes = []
        for c, counts in zip(s.constraints, s.counts, strict=True):
            # Values the snapshot's nodes lack (none, outside simulations) get codes too.
            index = {} if counts is None else dict(counts.index)
            codes.append(np.fromiter(
                (index.setdefault(lb[c.topology_key], len(index)) if c.topology_key in lb
                 else -1 for lb in labels), dtype=np.int64, count=len(labels)))
        s.sizes = _sizes_of(s, codes, ignored)
    return s.sizes


def score(s: PreScoreState, node_info: NodeInfo) -> int:
    sizes = _sizes_for_filtered(s)
    labels = node_info.labels
    if s.require_all_topologies and not node_labels_match(labels, s.constraints):
        return 0
    total = 0.0
    for c, counts, weight in zip(s.constraints, s.counts, sizes.weights, strict=True):
        value = labels.get(c.topology_key)
        if value is None:
            continue
        if counts is None:
            cnt = sum(1 for p in node_info.pods.values()
                      if p.namespace == s.namespace and c.selector.requirements
                      and c.selector.matches(p.labels) and not is_terminating(p.pod))
        else:
            cnt = counts.get(value)
        total += cnt * weight + (c.max_skew - 1)
    return _round(total)


def score_nodes(s: PreScoreState, idx: np.ndarray) -> np.ndarray:
    ignored = (~s.has_all[idx] if s.require_all_topologies
               else np.zeros(len(idx), dtype=bool))
    codes = [node_codes[idx] for node_codes in s.codes]
    s.sizes = _sizes_of(s, codes, ignored)
    total = np.zeros(len(idx), dtype=np.float64)
    for i, c in enumerate(s.constraints):
        counts = s.counts[i]
        if counts is not None:
            cnt = counts.at(idx)
        else:
            per_node = s.per_node[i]
            assert per_node is not None  # a hostname constraint is counted per node
            cnt = per_node[idx]
        total += np.where(codes[i] >= 0, cnt * s.sizes.weights[i] + (c.max_skew - 1), 0.0)
    whole = np.floor(total)
    out = (whole + (total - whole >= 0.5)).astype(np.int64)
    out[ignored] = 0
    return out


def normalize(s: PreScoreState, scores: np.ndarray) -> None:
    """In place; ``scores`` are those of the scored nodes, in their order."""
    ignored = (s.sizes if s.sizes is not None else _sizes_for_filtered(s)).ignored
    kept = ~ignored
    if kept.any():
        least, most = int(scores[kept].min()), max(int(scores[kept].max()), 0)
        if most == 0:
            scores[kept] = MAX_NODE_SCORE
        else:
            scores[kept] = MAX_NODE_SCORE * (most + least - scores[kept]) // most
    scores[ignored] = 0
