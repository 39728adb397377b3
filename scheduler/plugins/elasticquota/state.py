"""The ElasticQuota plugin's cycle state and its resource-list comparisons and messages.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/plugin_helper.go``
(``PostFilterState``, ``snapshotPostFilterState``, ``printResourceList``) and the
``quotav1.LessThanOrEqual`` / ``Mask`` arithmetic its checks use. PreFilter snapshots the
quota's used, non-preemptible used and limit; AddPod/RemovePod move ``used`` while preemption
simulates evicting pods of the quota; the preemption policy asks ``request_fits``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from api.extension.objects import namespaced_name
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.elasticquota.core import PodEntry, ResourceInts, to_resource_list
from scheduler.plugins.elasticquota.core.quota_info import add_non_negative, mask

STATE_KEY = "PostFilterElasticQuota"


def add(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceInts:
    """``quotav1.Add``: every name of either side."""
    out = dict(a)
    for name, v in b.items():
        out[name] = out.get(name, 0) + v
    return out


def exceeded(used: Mapping[str, int], limit: Mapping[str, int]) -> list[str]:
    """The names of ``limit`` that ``used`` goes over, sorted (``quotav1.LessThanOrEqual``
    compares only names present on both sides)."""
    return sorted(name for name, q in limit.items() if name in used and used[name] > q)


def less_equal(used: Mapping[str, int], limit: Mapping[str, int]) -> bool:
    return not exceeded(used, limit)


def print_resource_list(rl: Mapping[str, int]) -> str:
    """``name:qty`` pairs sorted and joined by ``,``; ``<empty>`` for none."""
    if not rl:
        return "<empty>"
    return ",".join(sorted(f"{k}:{v}" for k, v in to_resource_list(rl).items()))


def print_names(names: list[str]) -> str:
    """A Go slice as ``%v`` prints it."""
    return "[" + " ".join(names) + "]"


@dataclass(slots=True)
class QuotaCycleState:
    """Upstream ``PostFilterState``: the pod's quota as PreFilter saw it."""

    skip: bool = False
    # The quota's max names, which a pod's request is masked to.
    max_names: frozenset[str] = frozenset()
    # The live quota's pods (read only): which victims count for it, and for how much.
    pods: Mapping[str, PodEntry] = field(default_factory=dict)
    # The pod's request, masked to the quota's max names.
    request: ResourceInts = field(default_factory=dict)
    used: ResourceInts = field(default_factory=dict)
    non_preemptible_used: ResourceInts = field(default_factory=dict)
    # runtime, or max when enableRuntimeQuota is off
    used_limit: ResourceInts = field(default_factory=dict)

    def clone(self) -> QuotaCycleState:
        return QuotaCycleState(self.skip, self.max_names, self.pods, dict(self.request),
                               dict(self.used), dict(self.non_preemptible_used),
                               dict(self.used_limit))

    def charges(self, pod: PodInfo) -> ResourceInts | None:
        """What ``pod`` counts for in the quota; None when it is not one of its pods."""
        if self.skip:
            return None
        entry = self.pods.get(namespaced_name(pod.pod))
        if entry is None:
            return None
        return {k: v for k, v in entry.request.items() if k in self.max_names}

    def add_pod(self, pod: PodInfo) -> None:
        charge = self.charges(pod)
        if charge is not None:
            self.used = add(self.used, charge)

    def remove_pod(self, pod: PodInfo) -> None:
        charge = self.charges(pod)
        if charge is not None:
            add_non_negative(self.used, {k: -v for k, v in charge.items()})

    def update_with_pod(self, other: PodInfo, pod: PodInfo, node_info: NodeInfo,
                        delta: int) -> None:
        """AddPod (+1) / RemovePod (-1) during preemption's simulation
        (``PodUpdatingPreFilterExtensions``)."""
        if delta > 0:
            self.add_pod(other)
        else:
            self.remove_pod(other)

    def request_fits(self) -> bool:
        """used + request ≤ limit in the request's names (the reprieve check)."""
        if self.skip:
            return True
        return less_equal(mask(add(self.used, self.request), self.request), self.used_limit)


__all__ = ["STATE_KEY", "QuotaCycleState", "add", "exceeded", "less_equal", "print_names",
           "print_resource_list"]
