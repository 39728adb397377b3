"""One gang: its parameters (from a PodGroup or from its pods' annotations) and its members.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/core/gang.go``
(``tryInitByPodGroup``, ``tryInitByPodConfig``, the children / waiting / bound sets and
``isGangValidForPermit``). The gang cache (``gang_cache.py``) owns every Gang and guards it
with its lock; nothing here locks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from api.errors import MalformedValueError
from api.extension.coscheduling import (
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MATCH_POLICY,
    ANNOTATION_GANG_MODE,
    ANNOTATION_GANG_TOTAL_NUM,
    ANNOTATION_GANG_WAIT_TIME,
    GangMatchPolicy,
    GangMode,
    gang_group_id,
    get_gang_match_policy,
    get_gang_min_num,
    get_gang_mode,
    get_gang_total_num,
    get_gang_wait_time,
    parse_gang_groups,
    parse_gang_total_num,
    parse_gang_wait_time,
)
from api.extension.objects import annotations_of

PodDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class BadValue:
    """A gang annotation that could not be used, and what was done instead."""

    key: str
    value: str
    reason: str
    treatment: str

    def message(self, where: str) -> str:
        return (f"{where}: invalid value {self.value!r} for {self.key}: {self.reason}; "
                f"{self.treatment}")


@dataclass(slots=True)
class GangParams:
    """What the gang's source (PodGroup or first pod) says about it."""

    min_member: int
    total_number: int
    mode: GangMode
    match_policy: GangMatchPolicy | str
    wait_time: float
    groups: tuple[str, ...]


def _groups(annotations: Mapping[str, str], gang_id: str, bad: list[BadValue]) -> tuple[str, ...]:
    try:
        groups = parse_gang_groups(annotations)
    except MalformedValueError as err:
        bad.append(BadValue(ANNOTATION_GANG_GROUPS, annotations[ANNOTATION_GANG_GROUPS],
                            err.reason, f"the gang forms a group of its own ({gang_id})"))
        groups = None
    return tuple(groups) if groups else (gang_id,)


def params_from_annotations(annotations: Mapping[str, str], gang_id: str, min_member: int,
                            wait_time: float | None, default_wait: float,
                            default_policy: str) -> tuple[GangParams, list[BadValue]]:
    """The parameters shared by PodGroup and pod gangs, with the values that fell back.

    ``wait_time`` is the PodGroup's scheduleTimeoutSeconds (None for pod gangs, which take
    the waiting-time annotation)."""
    bad: list[BadValue] = []
    try:
        parse_gang_total_num(annotations)
    except MalformedValueError as err:
        bad.append(BadValue(ANNOTATION_GANG_TOTAL_NUM, annotations[ANNOTATION_GANG_TOTAL_NUM],
                            err.reason, f"totalNumber is minMember ({min_member})"))
    if wait_time is None:
        try:
            parse_gang_wait_time(annotations)
        except MalformedValueError as err:
            bad.append(BadValue(ANNOTATION_GANG_WAIT_TIME,
                                annotations[ANNOTATION_GANG_WAIT_TIME], err.reason,
                                f"the scheduler's default timeout ({default_wait:g}s) is used"))
        wait_time = get_gang_wait_time(annotations, default_wait)
    mode_raw = annotations.get(ANNOTATION_GANG_MODE, "")
    if mode_raw and mode_raw not in (GangMode.STRICT, GangMode.NON_STRICT):
        bad.append(BadValue(ANNOTATION_GANG_MODE, mode_raw,
                            "must be Strict or NonStrict", "the gang is Strict"))
    policy_raw = annotations.get(ANNOTATION_GANG_MATCH_POLICY, "")
    if policy_raw and policy_raw not in {p.value for p in GangMatchPolicy}:
        bad.append(BadValue(ANNOTATION_GANG_MATCH_POLICY, policy_raw,
                            "must be one of only-waiting, waiting-and-running, once-satisfied",
                            f"the default match policy {default_policy} is used"))
    params = GangParams(
        min_member=min_member,
        total_number=get_gang_total_num(annotations, min_member),
        mode=get_gang_mode(annotations),
        match_policy=get_gang_match_policy(annotations, default_policy),
        wait_time=wait_time,
        groups=_groups(annotations, gang_id, bad))
    return params, bad


def params_from_pod(pod: PodDict, gang_id: str, default_wait: float,
                    default_policy: str) -> tuple[GangParams | None, list[BadValue]]:
    """A pod-annotation gang's parameters; None (not initialised) without a usable
    min-available, as upstream's ``tryInitByPodConfig``."""
    try:
        min_member = get_gang_min_num(pod)
    except MalformedValueError as err:
        value = _raw_min(pod, err.key)
        return None, [BadValue(err.key, value, err.reason,
                               "the gang is not initialised and its pods are not scheduled")]
    if min_member is None:
        return None, []
    return params_from_annotations(annotations_of(pod), gang_id, min_member, None,
                                   default_wait, default_policy)


def _raw_min(pod: PodDict, key: str) -> str:
    meta = pod.get("metadata") or {}
    return str((meta.get("labels") or {}).get(key) or (meta.get("annotations") or {}).get(key))


def params_from_pod_group(pg: Mapping[str, Any], gang_id: str, default_wait: float,
                          default_policy: str) -> tuple[GangParams, list[BadValue]]:
    """A PodGroup gang's parameters (``tryInitByPodGroup``)."""
    spec = pg.get("spec") or {}
    timeout = spec.get("scheduleTimeoutSeconds")
    wait = float(timeout) if isinstance(timeout, int) and timeout > 0 else default_wait
    return params_from_annotations(annotations_of(pg), gang_id,
                                   int(spec.get("minMember") or 0), wait, default_wait,
                                   default_policy)


@dataclass(slots=True)
class Gang:
    """A gang and its members, by pod uid."""

    id: str
    from_pod_group: bool = False
    params: GangParams | None = None  # None: not initialised
    children: dict[str, PodDict] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)  # assumed, waiting at Permit
    bound: set[str] = field(default_factory=set)

    @property
    def initialised(self) -> bool:
        return self.params is not None

    @property
    def min_member(self) -> int:
        return self.params.min_member if self.params is not None else 0

    @property
    def groups(self) -> tuple[str, ...]:
        return self.params.groups if self.params is not None else (self.id,)

    @property
    def group_id(self) -> str:
        return gang_group_id(self.groups, self.id)

    def valid_for_permit(self, once_satisfied: bool) -> bool:
        """Whether enough members are assumed for the group to bind (§9.3's table)."""
        if self.params is None:
            return False
        waiting, need = len(self.waiting), self.params.min_member
        policy = self.params.match_policy
        if policy == GangMatchPolicy.ONLY_WAITING:
            return waiting >= need
        if policy == GangMatchPolicy.WAITING_AND_RUNNING:
            return waiting + len(self.bound) >= need
        return waiting >= need or once_satisfied
