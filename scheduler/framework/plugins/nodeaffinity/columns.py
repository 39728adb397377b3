"""Node selectors evaluated over every node of a Snapshot at once, with label columns.

Part of kubernetes ``pkg/scheduler/framework/plugins/nodeaffinity`` in this port: the
vectorised Filter and Score. Grouping nodes by label set does not help (the hostname label
makes every node's set unique), so each label key becomes a column instead: the node's value
as a code into the key's distinct values (-1 where the node lacks the label). A requirement is
then one numpy operation over the codes, or a check of the distinct values spread back over
the nodes (``Gt``/``Lt``).

Columns and the masks and scores of each selector are memoised in the snapshot: they depend
only on node objects. The arrays returned are shared and read-only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pkg.util.labels import DOES_NOT_EXIST, EXISTS, IN
from pkg.util.nodeaffinity import (
    OBJECT_NAME_FIELD,
    FieldRequirement,
    LabelRequirement,
    NodeSelector,
    NodeSelectorTerm,
    NumericRequirement,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)
from scheduler.framework.snapshot import Snapshot

_MEMO = "NodeAffinity"


@dataclass(frozen=True, slots=True)
class LabelColumn:
    """One label key over the snapshot's nodes."""

    codes: np.ndarray  # per node: index into values, -1 where the node lacks the label
    values: tuple[str, ...]  # the distinct values
    index: dict[str, int]  # value → code

    def equal(self, value: str) -> np.ndarray:
        code = self.index.get(value)
        if code is None:
            return np.zeros(len(self.codes), dtype=bool)
        return self.codes == code


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _build_column(snapshot: Snapshot, key: str) -> LabelColumn:
    index: dict[str, int] = {}
    codes = np.full(len(snapshot.node_infos), -1, dtype=np.int64)
    for i, ni in enumerate(snapshot.node_infos):
        value = ni.labels.get(key)
        if value is not None:
            code = index.get(value)
            if code is None:
                code = index[value] = len(index)
            codes[i] = code
    return LabelColumn(_read_only(codes), tuple(index), index)


def label_column(snapshot: Snapshot, key: str) -> LabelColumn:
    """The column of label ``key`` (memoised until a node object changes)."""
    return snapshot.memoized((_MEMO, "column", key), lambda: _build_column(snapshot, key))


def _label_mask(snapshot: Snapshot, req: LabelRequirement) -> np.ndarray:
    col = label_column(snapshot, req.key)
    if isinstance(req, NumericRequirement):
        # Per distinct value, then spread; the extra last entry answers code -1 (absent).
        accepted = np.fromiter((req.accepts(v) for v in col.values), dtype=bool,
                               count=len(col.values))
        return np.append(accepted, False)[col.codes]
    op = req.operator
    if op == EXISTS:
        return col.codes >= 0
    if op == DOES_NOT_EXIST:
        return col.codes < 0
    hit = np.isin(col.codes, [col.index[v] for v in req.values if v in col.index])
    return hit if op == IN else ~hit


def _field_mask(snapshot: Snapshot, req: FieldRequirement) -> np.ndarray:
    n = len(snapshot.node_infos)
    if req.key == OBJECT_NAME_FIELD:
        equal = np.zeros(n, dtype=bool)
        i = snapshot.index.get(req.value)
        if i is not None:
            equal[i] = True
    else:
        # Any other field reads as "" on every node.
        equal = np.full(n, req.value == "", dtype=bool)
    return equal if req.operator == IN else ~equal


def term_mask(snapshot: Snapshot, term: NodeSelectorTerm) -> np.ndarray:
    n = len(snapshot.node_infos)
    if term.errors:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for req in term.labels or ():
        mask &= _label_mask(snapshot, req)
    if term.fields is not None:
        fields = np.ones(n, dtype=bool)
        for f in term.fields:
            fields &= _field_mask(snapshot, f)
        # Fields are not checked on a node without a name.
        mask &= fields | _unnamed(snapshot)
    return mask


def _unnamed(snapshot: Snapshot) -> np.ndarray:
    return snapshot.memoized((_MEMO, "unnamed"),
                             lambda: _read_only(snapshot.names == ""))


def _selector_mask(snapshot: Snapshot, selector: NodeSelector) -> np.ndarray:
    mask = np.zeros(len(snapshot.node_infos), dtype=bool)
    for term in selector.terms:
        mask |= term_mask(snapshot, term)
    return mask


def selector_mask(snapshot: Snapshot, selector: NodeSelector) -> np.ndarray:
    """Per node, whether ``selector`` matches it (memoised per selector)."""
    return snapshot.memoized((_MEMO, "selector", selector),
                             lambda: _read_only(_selector_mask(snapshot, selector)))


def _required_mask(snapshot: Snapshot, required: RequiredNodeAffinity) -> np.ndarray:
    mask = np.ones(len(snapshot.node_infos), dtype=bool)
    for key, value in required.node_selector:
        mask &= label_column(snapshot, key).equal(value)
    if required.affinity is not None:
        mask &= _selector_mask(snapshot, required.affinity)
    return _read_only(mask)


def required_mask(snapshot: Snapshot, required: RequiredNodeAffinity) -> np.ndarray:
    """Per node, whether a pod's nodeSelector and required affinity hold.

    Memoised per affinity, except one that names nodes (matchFields): those are mostly one
    per pod (a DaemonSet's pods each name their node) and would only fill the memo.
    """
    if required.affinity is not None and any(
            t.fields is not None for t in required.affinity.terms):
        return _required_mask(snapshot, required)
    return snapshot.memoized((_MEMO, "required", required),
                             lambda: _required_mask(snapshot, required))


def _preferred_scores(snapshot: Snapshot, terms: PreferredSchedulingTerms) -> np.ndarray:
    scores = np.zeros(len(snapshot.node_infos), dtype=np.int64)
    for weight, term in terms.terms:
        scores += weight * term_mask(snapshot, term)
    return scores


def preferred_scores(snapshot: Snapshot, terms: PreferredSchedulingTerms) -> np.ndarray:
    """Per node, the summed weights of the terms it matches (memoised per term list)."""
    return snapshot.memoized((_MEMO, "preferred", terms),
                             lambda: _read_only(_preferred_scores(snapshot, terms)))
