"""The gang scheduling context: which gang group the scheduler is placing right now.

Corresponds to koordinator ``pkg/scheduler/plugins/coscheduling/core/gang_context.go``
(``GangSchedulingContextHolder``). The first pod of a group to pass PreFilter opens the
context; NextPod then hands the scheduler the group's other pending pods, one after another,
before the queue's own order resumes, so a gang's members are tried together instead of
interleaved with other gangs (each of which would hold part of the cluster at Permit). Once a
member of a Strict group fails, the context keeps the failure and the group's remaining
members fail at PreFilter with it, without a Filter pass each. The context closes when the
group passes Permit, when no pending member is left to try, or when another group's pod
opens its own.

Every method runs on the scheduling loop's thread (PreFilter, PostFilter, Permit and the
queue's pop), so the holder needs no lock of its own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

REASON_FIRST_POD_PASSED_PRE_FILTER = "the first pod of gang pass preFilter"
REASON_ALL_PENDING_PODS_ATTEMPTED = "all pending pods is already been attempted"
REASON_GANG_SUCCEEDED = "gang is already succeed"


@dataclass(slots=True)
class GangSchedulingContext:
    group_id: str
    gangs: tuple[str, ...]
    first_pod: str
    # Pod keys handed out or tried in this context (never handed out again).
    attempted: set[str] = field(default_factory=set)
    # The group's failure once a Strict member could not be placed (its later members'
    # PreFilter answer).
    failed_message: str = ""


class GangSchedulingContextHolder:
    def __init__(self) -> None:
        self.current: GangSchedulingContext | None = None

    def open(self, group_id: str, gangs: tuple[str, ...], first_pod: str) -> GangSchedulingContext:
        self.current = GangSchedulingContext(group_id, gangs, first_pod, {first_pod})
        log.debug("gang scheduling context set: group %s, reason: %s, first pod %s", group_id,
                  REASON_FIRST_POD_PASSED_PRE_FILTER, first_pod)
        return self.current

    def of_group(self, group_id: str) -> GangSchedulingContext | None:
        ctx = self.current
        return ctx if ctx is not None and ctx.group_id == group_id else None

    def clear(self, reason: str) -> None:
        ctx = self.current
        if ctx is not None:
            log.debug("gang scheduling context cleared: group %s, reason: %s, attempted: %d",
                      ctx.group_id, reason, len(ctx.attempted))
        self.current = None
