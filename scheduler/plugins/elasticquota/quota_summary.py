"""A pending pod's quota path in figures and words: the ``quota`` section of its why-pending entry.

No upstream counterpart: koordinator's ``pkg/scheduler/plugins/elasticquota/plugin.go`` leaves
only PreFilter's "Insufficient quotas" message, and its debug API serves each quota's summary
(``GetQuotaSummary``) one by one. ``explain`` takes the pod's path root → quota from the tree as
it is now, runs PreFilter's checks (used + request within the runtime, or ``max`` without
``enableRuntimeQuota``; a non-preemptible pod's non-preemptible used + request within ``min``;
every ancestor below the root with ``enableCheckParentQuota``) and says which dimensions block the
pod at which level. Its hints name the states of the tree that users found confusing
(koordinator#2104, #2342, #2393): a sibling that does not lend its idle min, a min scaled down
because the children's mins sum over their parent's runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from api.extension.elastic_quota import ROOT_QUOTA_NAME
from scheduler.plugins.elasticquota.core import QuotaInfo, ResourceInts, to_resource_list
from scheduler.plugins.elasticquota.core.quota_info import mask
from scheduler.plugins.elasticquota.state import add, exceeded, print_names, print_resource_list


class Check(StrEnum):
    """What a level's figures went over."""

    RUNTIME = "runtime"  # used + request > runtime
    MAX = "max"  # used + request > max (enableRuntimeQuota off)
    MIN = "min"  # a non-preemptible pod: non-preemptible used + request > min


@dataclass(frozen=True, slots=True)
class Block:
    """One failed check: at which quota, against what, in which dimensions."""

    quota: str
    check: Check
    dimensions: tuple[str, ...]

    def words(self) -> str:
        used = "nonPreemptibleUsed" if self.check is Check.MIN else "used"
        return f"{used} + request > {self.check} in {print_names(list(self.dimensions))}"

    def to_dict(self) -> dict[str, object]:
        return {"quota": self.quota, "check": str(self.check),
                "dimensions": list(self.dimensions)}


@dataclass(frozen=True, slots=True)
class QuotaLevel:
    """One quota of the path, as the tree has it (integers: cpu in milli)."""

    name: str
    min: ResourceInts
    max: ResourceInts
    auto_scale_min: ResourceInts
    runtime: ResourceInts
    used: ResourceInts
    request: ResourceInts
    non_preemptible_used: ResourceInts
    allow_lent: bool

    @classmethod
    def of(cls, q: QuotaInfo) -> QuotaLevel:
        return cls(q.name, q.min, q.max, q.auto_scale_min, q.runtime, q.used, q.request,
                   q.non_preemptible_used, q.allow_lent)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "min": to_resource_list(self.min),
                "max": to_resource_list(self.max),
                "autoScaleMin": to_resource_list(self.auto_scale_min),
                "runtime": to_resource_list(self.runtime), "used": to_resource_list(self.used),
                "request": to_resource_list(self.request),
                "nonPreemptibleUsed": to_resource_list(self.non_preemptible_used),
                "allowLentResource": self.allow_lent}

    def figures(self, non_preemptible: bool) -> str:
        shown = [("min", self.min), ("max", self.max)]
        if any(self.auto_scale_min.get(d, v) < v for d, v in self.min.items()):
            shown.append(("autoScaleMin", self.auto_scale_min))
        shown += [("runtime", self.runtime), ("used", self.used), ("request", self.request)]
        if non_preemptible:
            shown.append(("nonPreemptibleUsed", self.non_preemptible_used))
        # The root has neither min nor max: leave them out rather than print "<empty>".
        return ", ".join(f"{k} {print_resource_list(v)}" for k, v in shown
                         if v or k not in ("min", "max"))


@dataclass(frozen=True, slots=True)
class QuotaChecks:
    """Which of PreFilter's checks the plugin's arguments turn on."""

    runtime_quota: bool = True  # enableRuntimeQuota: the limit is the runtime, else max
    check_parent: bool = False  # enableCheckParentQuota
    min_scale: bool = True  # enableMinQuotaScale


@dataclass(frozen=True, slots=True)
class QuotaPodState:
    """A pending pod of a quota: the path root first, its request, what blocks it, hints."""

    pod: str
    quota: str
    request: ResourceInts
    non_preemptible: bool
    path: tuple[QuotaLevel, ...]
    blocks: tuple[Block, ...]
    hints: tuple[str, ...]

    def message(self) -> str:
        if not self.blocks:
            return f"fits quota {self.quota} at every level checked"
        first = self.blocks[0]
        return f"Insufficient quota at {first.quota}: {first.words()}"

    def to_dict(self) -> dict[str, object]:
        return {"pod": self.pod, "quotaName": self.quota,
                "podRequest": to_resource_list(self.request),
                "nonPreemptible": self.non_preemptible,
                "path": [level.to_dict() for level in self.path],
                "blocked": [b.to_dict() for b in self.blocks], "hints": list(self.hints)}

    def lines(self) -> list[str]:
        head = (f"Quota {self.quota}: the pod requests {print_resource_list(self.request)}"
                f"{' (non-preemptible)' if self.non_preemptible else ''}; ")
        if self.blocks:
            head += "blocked at " + "; ".join(f"{b.quota}: {b.words()}" for b in self.blocks)
        else:
            head += "it fits at every level checked"
        out = [head + ".", "  path, root first:"]
        for depth, level in enumerate(self.path):
            marks = [b.words() for b in self.blocks if b.quota == level.name]
            out.append(f"  {'  ' * depth}{level.name}: {level.figures(self.non_preemptible)}"
                       + (f"  <- {'; '.join(marks)}" if marks else ""))
        out.extend(f"  hint: {h}" for h in self.hints)
        return out


def explain(key: str, path: Sequence[QuotaInfo], request: Mapping[str, int],
            non_preemptible: bool, checks: QuotaChecks,
            children_of: Callable[[str], Sequence[QuotaInfo]]) -> QuotaPodState:
    """PreFilter's checks of a pod requesting ``request`` (before masking) on ``path`` (root
    first, as ``GroupQuotaManager.path_summary`` gives it), all of them rather than the first
    that fails; ``children_of`` gives a quota's children for the hints."""
    leaf = path[-1]
    request = mask(request, leaf.max)
    check = Check.RUNTIME if checks.runtime_quota else Check.MAX

    def limit(q: QuotaInfo) -> ResourceInts:
        return q.runtime if checks.runtime_quota else q.max

    blocks: list[Block] = []
    if dims := exceeded(add(request, leaf.used), limit(leaf)):
        blocks.append(Block(leaf.name, check, tuple(dims)))
    if non_preemptible and (dims := exceeded(add(request, leaf.non_preemptible_used), leaf.min)):
        blocks.append(Block(leaf.name, Check.MIN, tuple(dims)))
    if checks.check_parent:
        for q in reversed(path[:-1]):
            if q.name == ROOT_QUOTA_NAME:
                break
            if dims := exceeded(mask(add(request, q.used), request), limit(q)):
                blocks.append(Block(q.name, check, tuple(dims)))
    return QuotaPodState(key, leaf.name, request, non_preemptible,
                         tuple(QuotaLevel.of(q) for q in path), tuple(blocks),
                         tuple(_hints(path, checks, children_of)))


def _hints(path: Sequence[QuotaInfo], checks: QuotaChecks,
           children_of: Callable[[str], Sequence[QuotaInfo]]) -> list[str]:
    hints: list[str] = []
    for parent, child in zip(path, path[1:], strict=False):
        children = children_of(parent.name)
        min_sum: ResourceInts = {}
        for c in children:
            min_sum = add(min_sum, c.min)
        mins = f"the mins of {parent.name}'s {len(children)} child(ren) sum to "
        if over := exceeded(min_sum, parent.runtime):
            then = ("each scalable child's min is scaled down in proportion "
                    "(enableMinQuotaScale)" if checks.min_scale else
                    "not every child gets its min (enableMinQuotaScale is off)")
            hints.append(f"{mins}{print_resource_list({d: min_sum[d] for d in over})}, more "
                         f"than its runtime "
                         f"{print_resource_list({d: parent.runtime[d] for d in over})}: {then}")
        elif over := exceeded(min_sum, parent.min):
            # Not short yet: once the parent's siblings claim their share its runtime may
            # fall to its own min, which cannot hold every child's.
            hints.append(f"{mins}{print_resource_list({d: min_sum[d] for d in over})}, more "
                         f"than its min {print_resource_list({d: parent.min[d] for d in over})}"
                         f": they are guaranteed only while {parent.name} borrows")
        scaled = {d: v for d, v in child.min.items() if child.auto_scale_min.get(d, v) < v}
        if scaled:
            hints.append(f"{child.name}'s min {print_resource_list(scaled)} is scaled down to "
                         f"autoScaleMin {print_resource_list(mask(child.auto_scale_min, scaled))}"
                         f" while {parent.name} is short: its runtime may stay below its min")
        for s in children:
            if s.name == child.name or s.allow_lent:
                continue
            idle = {d: m for d, m in s.min.items() if s.used.get(d, 0) < m}
            if idle:
                hints.append(f"{s.name}, beside {child.name} under {parent.name}, does not lend "
                             f"(allow-lent-resource: false): it keeps its min "
                             f"{print_resource_list(idle)} while using "
                             f"{print_resource_list({d: s.used.get(d, 0) for d in idle})}")
    if not path[-1].allow_lent and path[-1].name != ROOT_QUOTA_NAME:
        hints.append(f"{path[-1].name} does not lend (allow-lent-resource: false): its request "
                     "to its parent is at least its min, whatever its pods ask")
    return hints


__all__ = ["Block", "Check", "QuotaChecks", "QuotaLevel", "QuotaPodState", "explain"]
