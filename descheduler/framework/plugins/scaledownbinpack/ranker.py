"""The global scale-down rank of the target pods: nodes cheapest to empty first, and on each
node its largest, newest pods first.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/scaledownbinpack/ranker.go``.
A node's evacuation score is Σ_r w_r·(non-target requests / capacity) over Σ_r w_r·(target
requests / capacity) — the share of the node that scaling the targets down would not free —
with ``inf`` for nodes holding non-target requests only. Requests are in milli-units for every
resource, as upstream weighs them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from api.meta import parse_timestamp
from descheduler.framework.types import Obj
from descheduler.utils.node import CPU, MEMORY
from pkg.util.podresources import pod_requests, resource_list


@dataclass(frozen=True, slots=True)
class RankedPod:
    pod: Obj
    rank: int
    node_name: str
    evacuation_score: float


@dataclass(slots=True)
class NodePods:
    """A node's pods, sorted out by the plugin: eligible targets, targets that cannot be
    evicted (skipped) and everything else."""

    node: Obj
    eligible: list[Obj] = field(default_factory=list)
    skipped: list[Obj] = field(default_factory=list)
    non_target: list[Obj] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str((self.node.get("metadata") or {}).get("name") or "")


def milli_request(pod: Obj, resource: str) -> int:
    q = pod_requests(pod).get(resource, 0)
    return q if resource == CPU else q * 1000


def _total(pods: Iterable[Obj], resource: str) -> int:
    return sum(milli_request(p, resource) for p in pods)


def evacuation_score(node: NodePods, weights: Mapping[str, float]) -> float:
    capacity = resource_list((node.node.get("status") or {}).get("capacity"))
    num = den = 0.0
    for r, w in weights.items():
        cap = capacity.get(r, 0) * (1 if r == CPU else 1000)
        if cap <= 0:
            continue
        num += w * (_total([*node.non_target, *node.skipped], r) / cap)
        den += w * (_total(node.eligible, r) / cap)
    if den > 0:
        return num / den
    return math.inf if num > 0 else 0.0


def pod_size(pod: Obj, weights: Mapping[str, float]) -> float:
    return sum(w * milli_request(pod, r) for r, w in weights.items())


def rank_pods(nodes: Sequence[NodePods], weights: Mapping[str, float] | None) -> list[RankedPod]:
    """Ranks 0, 1, … over the eligible pods of nodes that have any."""
    weights = weights or {CPU: 1.0, MEMORY: 1.0}
    scored = [(evacuation_score(n, weights), n) for n in nodes if n.eligible]
    scored.sort(key=lambda s: (s[0], len(s[1].eligible), s[1].name))
    def key(pod: Obj) -> tuple[float, float, str, str]:
        md = pod.get("metadata") or {}
        created = parse_timestamp(md.get("creationTimestamp")) or 0.0
        return (-pod_size(pod, weights), -created, md.get("namespace") or "",
                md.get("name") or "")

    ranked: list[RankedPod] = []
    for score, node in scored:
        for pod in sorted(node.eligible, key=key):
            ranked.append(RankedPod(pod, len(ranked), node.name, score))
    return ranked
