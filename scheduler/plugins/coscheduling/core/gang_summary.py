"""A gang's state in words and JSON: the ``gang`` section of a pending pod's why-pending entry.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/core/gang_summary.go``
(``GangSummary``, which upstream serves on the plugin's ``/gangs`` API): its JSON names are
upstream's (``minRequiredNumber``, ``children``, ``waitingForBindChildren``, ``boundChildren``,
``onceResourceSatisfied``, ``gangFrom``, ...). Beyond upstream, a pod's ``GangPodState`` adds
what ``hack/koord explain pod`` tells a user: where the pod stands in its gang (held at
PreEnqueue, waiting at Permit, in the queue), the message that holds it, and how long the
group's members have waited at Permit and have left before its timeout rejects them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from api.meta import format_duration
from pkg.client.informers.store import meta_namespace_key
from scheduler.plugins.coscheduling.core.gang import Gang
from scheduler.plugins.coscheduling.core.gang_cache import GangCache

# upstream's GangFromPodGroupCrd / GangFromPodAnnotation
GANG_FROM_POD_GROUP = "GangFromPodGroupCrd"
GANG_FROM_POD_ANNOTATION = "GangFromPodAnnotation"
# Names listed in words before "and N more" (the JSON lists all).
NAMES_SHOWN = 10

JSONValue = str | int | float | bool | None | list[str]


class PodStateInGang(StrEnum):
    HELD = "HeldAtPreEnqueue"  # the group lacks members: not tried at all
    WAITING = "WaitingAtPermit"  # assumed on a node, waiting for the rest of the group
    QUEUED = "Queued"  # may be tried: in the queue or backing off after a failure


@dataclass(frozen=True, slots=True)
class GangSummary:
    """One gang at one instant (``GetGangSummary``); pods as ``namespace/name``, sorted."""

    name: str
    gang_from: str
    has_gang_init: bool
    mode: str
    match_policy: str
    min_member: int
    total_number: int
    wait_time: float
    group: tuple[str, ...]
    children: tuple[str, ...]
    waiting: tuple[str, ...]
    bound: tuple[str, ...]
    once_satisfied: bool

    def to_dict(self) -> dict[str, JSONValue]:
        return {"name": self.name, "gangFrom": self.gang_from, "hasGangInit": self.has_gang_init,
                "mode": self.mode, "gangMatchPolicy": self.match_policy,
                "minRequiredNumber": self.min_member, "totalChildrenNum": self.total_number,
                "waitTimeSeconds": self.wait_time, "gangGroup": list(self.group),
                "children": list(self.children),
                "waitingForBindChildren": list(self.waiting),
                "boundChildren": list(self.bound),
                "onceResourceSatisfied": self.once_satisfied}


def summarize(cache: GangCache, gang: Gang) -> GangSummary:
    with cache.lock:
        p = gang.params
        keys = {uid: meta_namespace_key(pod) for uid, pod in gang.children.items()}
        return GangSummary(
            name=gang.id,
            gang_from=GANG_FROM_POD_GROUP if gang.from_pod_group else GANG_FROM_POD_ANNOTATION,
            has_gang_init=p is not None,
            mode=str(p.mode) if p is not None else "",
            match_policy=str(p.match_policy) if p is not None else "",
            min_member=gang.min_member,
            total_number=p.total_number if p is not None else 0,
            wait_time=p.wait_time if p is not None else 0.0,
            group=gang.groups,
            children=tuple(sorted(keys.values())),
            waiting=tuple(sorted(keys[u] for u in gang.waiting if u in keys)),
            bound=tuple(sorted(keys[u] for u in gang.bound if u in keys)),
            once_satisfied=gang.group_id in cache.once_satisfied)


@dataclass(frozen=True, slots=True)
class PermitWait:
    """One member parked at Permit, on the scheduler clock's monotonic scale."""

    since: float
    deadline: float


@dataclass(frozen=True, slots=True)
class GangPodState:
    """A pending gang pod: its gang, where it stands, and the Permit clock of its group."""

    pod: str
    state: PodStateInGang
    message: str
    gang: GangSummary
    # Since the group's first member parked at Permit / until the earliest member's timeout;
    # None when no member of the group waits at Permit.
    waited: float | None
    time_left: float | None

    def to_dict(self) -> dict[str, JSONValue]:
        return {"pod": self.pod, "state": str(self.state), "message": self.message,
                **self.gang.to_dict(), "waitedSeconds": self.waited,
                "timeLeftSeconds": self.time_left}

    def lines(self) -> list[str]:
        g = self.gang
        if not g.has_gang_init:
            return [f"Gang {g.name}: not initialised ({g.gang_from}); its pods wait for it.",
                    f"  members: {len(g.children)}{_names(g.children)}",
                    f"  {self.state}: {self.message}"]
        out = [f"Gang {g.name} ({g.gang_from}, {g.mode}, match policy {g.match_policy}): "
               f"members {len(g.children)} of {g.min_member} required "
               f"(totalNumber {g.total_number})"]
        if len(g.group) > 1:
            out.append(f"  gang group: {', '.join(g.group)}")
        out.append(f"  members:{_names(g.children)}")
        out.append(f"  waiting at Permit (assumed): {len(g.waiting)}{_names(g.waiting)}")
        out.append(f"  bound: {len(g.bound)}{_names(g.bound)}")
        out.append(f"  once satisfied: {'yes' if g.once_satisfied else 'no'}; "
                   f"wait time {format_duration(g.wait_time)}")
        if self.time_left is not None and self.waited is not None:
            out.append(f"  Permit: waiting {format_duration(round(self.waited))}, "
                       f"{format_duration(round(max(self.time_left, 0.0)))} left before the "
                       f"timeout rejects the group's waiting members")
        out.append(f"  this pod: {self.state}" + (f": {self.message}" if self.message else
                                                  " (its last failed attempt, if any, above)"))
        return out


def _names(keys: Iterable[str]) -> str:
    """`` (a, b, and N more)`` with a leading space, or nothing for no keys."""
    keys = list(keys)
    if not keys:
        return ""
    shown = ", ".join(keys[:NAMES_SHOWN])
    more = f", and {len(keys) - NAMES_SHOWN} more" if len(keys) > NAMES_SHOWN else ""
    return f" ({shown}{more})"


def permit_clock(waits: Iterable[PermitWait], now: float) -> tuple[float | None, float | None]:
    """(waited, time left) of a group from its members' Permit waits."""
    waits = list(waits)
    if not waits:
        return None, None
    return (now - min(w.since for w in waits), min(w.deadline for w in waits) - now)
