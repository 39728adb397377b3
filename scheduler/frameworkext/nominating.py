"""What becomes of a pod's nomination when a pseudo-plugin of job-level preemption rejects it
while it waits at Permit.

Corresponds to koordinator ``pkg/scheduler/frameworkext`` (``JobPreemptionSuccessPlugin``,
``JobPreemptionFailurePlugin``, ``JobRejectPlugin`` and the failure handling that rewrites the
nominating info, scheduler.md §4.7). Coscheduling's job preemption rejects the group's
waiting members with one of these names; the scheduler's binding cycle asks
``nomination_after_rejection`` which nomination the requeued pod keeps.
"""

from __future__ import annotations

from scheduler.framework.status import Status

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
