"""Which node-affinity requirements a node missed, in words, for the why-pending diagnosis.

Part of kubernetes ``pkg/scheduler/framework/plugins/nodeaffinity`` in this port (upstream's
Filter only says "didn't match"; ``hack/koord explain pod`` shows this text next to it).
Example: ``nodeSelector disktype=ssd (node has disktype=hdd); no required term matched:
[0] zone In [a, b] (node has zone=c)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from pkg.util.labels import DOES_NOT_EXIST, EXISTS
from pkg.util.nodeaffinity import (
    FieldRequirement,
    LabelRequirement,
    NodeSelector,
    NodeSelectorTerm,
    NumericRequirement,
    RequiredNodeAffinity,
)


def _has(labels: Mapping[str, str], key: str) -> str:
    return f"node has {key}={labels[key]}" if key in labels else f"node has no label {key}"


def _label_miss(req: LabelRequirement, labels: Mapping[str, str]) -> str:
    if isinstance(req, NumericRequirement):
        wanted = f"{req.key} {req.operator} {req.value}"
    elif req.operator in (EXISTS, DOES_NOT_EXIST):
        wanted = f"{req.key} {req.operator}"
    else:
        wanted = f"{req.key} {req.operator} [{', '.join(sorted(req.values))}]"
    return f"{wanted} ({_has(labels, req.key)})"


def _field_miss(req: FieldRequirement, node_name: str) -> str:
    return f"{req.key} {req.operator} [{req.value}] (node is {node_name})"


def term_misses(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> list[str]:
    """The requirements of ``term`` the node fails (all of them, not only the first)."""
    if term.errors:
        return ["invalid: " + ", ".join(term.errors)]
    misses = [_label_miss(r, labels) for r in term.labels or () if not r.matches(labels)]
    if node_name:
        misses += [_field_miss(f, node_name) for f in term.fields or ()
                   if not f.matches(node_name)]
    return misses


def explain_selector(selector: NodeSelector, labels: Mapping[str, str], node_name: str) -> str:
    """Why no term of ``selector`` matched the node."""
    if not selector.terms:
        return "no required term matched: there are no terms"
    parts = [f"[{i}] " + ", ".join(term_misses(t, labels, node_name))
             for i, t in enumerate(selector.terms)]
    return "no required term matched: " + "; ".join(parts)


def explain_required(required: RequiredNodeAffinity, labels: Mapping[str, str],
                     node_name: str) -> str | None:
    """Why a pod's nodeSelector / required affinity rejects the node; None when it does not."""
    parts = [f"nodeSelector {k}={v} ({_has(labels, k)})"
             for k, v in required.node_selector if labels.get(k) != v]
    if required.affinity is not None and not required.affinity.matches(labels, node_name):
        parts.append(explain_selector(required.affinity, labels, node_name))
    return "; ".join(parts) or None
