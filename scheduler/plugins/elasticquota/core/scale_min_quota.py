"""Scaling children's min down when their sum exceeds what the parent has (§8.4).

Corresponds to upstream
``pkg/scheduler/plugins/elasticquota/core/scale_minquota_when_over_root_res.go``
(``ScaleMinQuotaManager``): per parent, the sums of the original min of the children that may
be scaled and of those that may not; a scalable child's auto-scaled min in an oversubscribed
dimension is its share of what the non-scalable children leave.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler.plugins.elasticquota.core.runtime_quota_calculator import ResourceInts


def _add(into: ResourceInts, other: Mapping[str, int], sign: int = 1) -> None:
    for name, v in other.items():
        into[name] = into.get(name, 0) + sign * v


def _subtract_non_negative(into: ResourceInts, other: Mapping[str, int]) -> None:
    # quotav1.SubtractWithNonNegativeResult
    for name, v in other.items():
        into[name] = max(into.get(name, 0) - v, 0)


class ScaleMinQuotaManager:
    """Original min of every child and the per-parent sums (scalable / not scalable)."""

    __slots__ = ("disable_scale_sum", "enable_scale", "enable_scale_sum", "original_min",
                 "versions")

    def __init__(self) -> None:
        self.enable_scale_sum: dict[str, ResourceInts] = {}
        self.disable_scale_sum: dict[str, ResourceInts] = {}
        self.original_min: dict[str, ResourceInts] = {}
        self.enable_scale: dict[str, bool] = {}
        # parent → a counter moved by every change of its children's mins
        self.versions: dict[str, int] = {}

    def update(self, parent: str, child: str, min_quota: Mapping[str, int], enable: bool) -> None:
        enabled = self.enable_scale_sum.setdefault(parent, {})
        disabled = self.disable_scale_sum.setdefault(parent, {})
        if child in self.enable_scale:
            _subtract_non_negative(enabled if self.enable_scale[child] else disabled,
                                   self.original_min[child])
        _add(enabled if enable else disabled, min_quota)
        self.original_min[child] = dict(min_quota)
        self.enable_scale[child] = enable
        self.versions[parent] = self.versions.get(parent, 0) + 1

    def delete(self, parent: str, child: str) -> None:
        if child not in self.enable_scale:
            return
        sums = self.enable_scale_sum if self.enable_scale[child] else self.disable_scale_sum
        _subtract_non_negative(sums.setdefault(parent, {}), self.original_min.pop(child))
        del self.enable_scale[child]
        self.versions[parent] = self.versions.get(parent, 0) + 1

    def scaled_min(self, total: Mapping[str, int] | None, parent: str,
                   child: str) -> ResourceInts | None:
        """The child's auto-scaled min under a parent runtime ``total``; None: leave it alone."""
        original = self.original_min.get(child)
        enabled = self.enable_scale_sum.get(parent)
        disabled = self.disable_scale_sum.get(parent)
        if total is None or original is None or enabled is None or disabled is None or \
                not self.enable_scale.get(child):
            return None
        scaled = dict(original)
        for name, t in total.items():
            if t >= enabled.get(name, 0) + disabled.get(name, 0):
                continue
            left = t - disabled.get(name, 0)
            enable_total = enabled.get(name, 0)
            if left <= 0 or enable_total <= 0:
                scaled[name] = 0
            else:
                # float64 product truncated toward zero, as upstream
                scaled[name] = int(float(left) * float(original.get(name, 0)) / float(enable_total))
        return scaled


__all__ = ["ScaleMinQuotaManager"]
