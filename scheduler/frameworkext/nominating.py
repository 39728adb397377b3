"""Nominations around job-level preemption: what a pod rejected at Permit by one of its
pseudo-plugins keeps, and the members of the job whose nominations do not count against each
other while it is simulated.

Corresponds to koordinator ``pkg/scheduler/frameworkext`` (``JobPreemptionSuccessPlugin``,
``JobPreemptionFailurePlugin``, ``JobRejectPlugin`` and the failure handling that rewrites the
nominating info, scheduler.md §4.7; ``MakeNominatedPodsOfTheSameJob``). Coscheduling's job
preemption rejects the group's waiting members with one of these names, and the scheduler's
binding cycle asks ``nomination_after_rejection`` which nomination the requeued pod keeps. It
also marks its cycle state with the job's pending members, whose earlier nominations the
framework's Filter-with-nominated-pods then leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.status import Status

# CycleState key: uids of the job's pods whose nominations the simulation leaves out.
NOMINATED_PODS_OF_THE_SAME_JOB = "frameworkext/nominatedPodsOfTheSameJob"

# The group's preemption succeeded: the member keeps its assumed node as its nomination.
JOB_PREEMPTION_SUCCESS_PLUGIN = "JobPreemptionSuccessPlugin"
# The group's preemption failed: the member's nomination is cleared.
JOB_PREEMPTION_FAILURE_PLUGIN = "JobPreemptionFailurePlugin"
# The pod is only sent back (a victim waiting at Permit): its nomination is left alone.
JOB_REJECT_PLUGIN = "JobRejectPlugin"


def nomination_after_rejection(status: Status, node_name: str) -> str | None:
    """The node to nominate a pod to after its binding cycle failed with ``status`` on
    ``node_name``: a node, "" to clear the nomination, None to leave it."""
    if status.plugin == JOB_PREEMPTION_SUCCESS_PLUGIN:
        return node_name
    if status.plugin == JOB_REJECT_PLUGIN:
        return None
    return ""


def make_nominated_pods_of_the_same_job(state: CycleState, uids: Iterable[str]) -> None:
    """The pods ``uids`` are placed together: none's nomination counts against another."""
    state.write(NOMINATED_PODS_OF_THE_SAME_JOB, frozenset(uids))


def nominated_pods_of_the_same_job(state: CycleState) -> frozenset[str]:
    same_job: frozenset[str] = state.get(NOMINATED_PODS_OF_THE_SAME_JOB, frozenset())
    return same_job
