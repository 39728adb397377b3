"""Cluster events, the queueing hints plugins attach to them, and update classification.

Corresponds to kube-scheduler ``staging/src/k8s.io/kube-scheduler/framework/types.go``
(``ActionType``, ``EventResource``, ``ClusterEvent``, ``ClusterEventWithHint``,
``QueueingHint``), ``pkg/scheduler/framework/types.go`` (``MatchClusterEvents``) and
``pkg/scheduler/framework/events.go`` (the queue's special events and
``NodeSchedulingPropertiesChange`` / ``PodSchedulingPropertiesChange``), as of v1.35.

A plugin that rejects pods lists, in ``events_to_register``, the ``ClusterEventWithHint``s
that may make those pods schedulable; the scheduling queue moves a rejected pod out of
unschedulablePods only when such an event happens and its hint (if any) says ``QUEUE``.
Kubernetes objects are the parsed JSON dicts the informers deliver, so the update
classifiers below read dicts. Resources other than the built-in ones are free strings; a
Koordinator CRD is named ``<plural>.<version>.<group>`` as its informer registers it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum, IntFlag
from typing import Any

from pkg.util.podresources import pod_requests, resource_list


class ActionType(IntFlag):
    """What happened to a resource; bits combine (a registration of ADD|DELETE matches both)."""

    ADD = 1 << 0
    DELETE = 1 << 1
    # The specific updates let a plugin be woken only by the changes that can matter to it.
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    # Taints, and spec.unschedulable turning false.
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    # Some request of the pod went down (or away).
    UPDATE_POD_SCALE_DOWN = 1 << 8
    # Tolerations can only be added (API validation), so a length change is an addition.
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10

    UPDATE = (UPDATE_NODE_ALLOCATABLE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT
              | UPDATE_NODE_CONDITION | UPDATE_NODE_ANNOTATION | UPDATE_POD_LABEL
              | UPDATE_POD_SCALE_DOWN | UPDATE_POD_TOLERATION
              | UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    ALL = ADD | DELETE | UPDATE

    def display(self) -> str:
        """Upstream's ``ActionType.String()`` ("Add", "UpdateNodeTaint", "Update", ...)."""
        name = _ACTION_NAMES.get(int(self))
        if name is not None:
            return name
        # A combination: its single bits (iteration yields only those).
        return "|".join(_ACTION_NAMES[int(bit)] for bit in self)


_ACTION_NAMES: dict[int, str] = {
    ActionType.ADD: "Add",
    ActionType.DELETE: "Delete",
    ActionType.UPDATE_NODE_ALLOCATABLE: "UpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "UpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "UpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "UpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "UpdateNodeAnnotation",
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE: "Update",
    ActionType.ALL: "All",
}

# Resources (upstream EventResource). POD in a registration matches both pod kinds below;
# events themselves always name ASSIGNED_POD or UNSCHEDULED_POD.
POD = "Pod"
ASSIGNED_POD = "AssignedPod"
UNSCHEDULED_POD = "UnschedulablePod"
NODE = "Node"
WILDCARD_RESOURCE = "*"
# Koordinator CRDs that its plugins register events for (their EventsToRegister upstream).
NODE_METRIC = "nodemetrics.v1alpha1.slo.koordinator.sh"
RESERVATION = "reservations.v1alpha1.scheduling.koordinator.sh"
NODE_RESOURCE_TOPOLOGY = "noderesourcetopologies.v1alpha1.topology.node.k8s.io"
ELASTIC_QUOTA = "elasticquotas.v1alpha1.scheduling.sigs.k8s.io"
POD_GROUP = "podgroups.v1alpha1.scheduling.sigs.k8s.io"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A change to a resource. ``label`` (logs and metrics) defaults to resource + action."""

    resource: str
    action_type: ActionType
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.resource + self.action_type.display())

    def is_wildcard(self) -> bool:
        """A wildcard event moves every rejected pod, whatever its plugins registered."""
        return self.resource == WILDCARD_RESOURCE and self.action_type == ActionType.ALL

    def match(self, event: ClusterEvent) -> bool:
        """Whether this registration covers ``event`` (upstream ``MatchClusterEvents``).

        A "*" registration covers every resource, a "*" event only "*" registrations; a Pod
        registration covers assigned and unscheduled pods; the action bits must overlap.
        """
        r = self.resource
        if not (r == WILDCARD_RESOURCE or r == event.resource
                or (r == POD and event.resource in (ASSIGNED_POD, UNSCHEDULED_POD))):
            return False
        return bool(int(self.action_type) & int(event.action_type))


class QueueingHint(IntEnum):
    QUEUE_SKIP = 0  # the event cannot make the pod schedulable
    QUEUE = 1  # it may: retry the pod (after its backoff)


# hint_fn(pod, old_obj, new_obj): old_obj is None for an add, new_obj None for a delete. An
# exception counts as QUEUE so that a buggy hint cannot strand pods.
HintFn = Callable[[dict[str, Any], Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """An event a plugin registers; without ``hint_fn`` the event always requeues."""

    event: ClusterEvent
    hint_fn: HintFn | None = None


# Labels of the queue's own moves (metrics ``event`` label, logs).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"

ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULED_POD, ActionType.ADD)
UNSCHEDULED_POD_UPDATE = ClusterEvent(UNSCHEDULED_POD, ActionType.UPDATE)
UNSCHEDULED_POD_DELETE = ClusterEvent(UNSCHEDULED_POD, ActionType.DELETE)
NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
NODE_UPDATE = ClusterEvent(NODE, ActionType.UPDATE)
NODE_DELETE = ClusterEvent(NODE, ActionType.DELETE)
WILDCARD = ClusterEvent(WILDCARD_RESOURCE, ActionType.ALL)
# A pod sat in unschedulablePods longer than podMaxInUnschedulablePodsDuration.
UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD_RESOURCE, ActionType.ALL, "UnschedulableTimeout")
# A plugin (e.g. Coscheduling) pushed pods to activeQ.
FORCE_ACTIVATE = ClusterEvent(WILDCARD_RESOURCE, ActionType.ALL, "ForceActivate")


# Update classification ----------------------------------------------------------------------


def _meta(obj: Mapping[str, Any], field: str) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get(field) or {}


def _spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


def _allocatable_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    a, b = _status(old).get("allocatable") or {}, _status(new).get("allocatable") or {}
    if a == b:
        return False
    # Semantic equality, as upstream: "1000m" and "1" are the same cpu.
    try:
        return resource_list(a) != resource_list(b)
    except ValueError:
        return True


def _condition_statuses(node: Mapping[str, Any]) -> dict[str, Any]:
    return {c.get("type"): c.get("status") for c in _status(node).get("conditions") or ()}


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ClusterEvent]:
    """The Node update events one node update carries (upstream order; may be empty)."""
    events: list[ClusterEvent] = []
    old_unsched, new_unsched = bool(_spec(old).get("unschedulable")), bool(
        _spec(new).get("unschedulable"))
    # Only a node becoming schedulable can help a pod; it shares UpdateNodeTaint upstream.
    if old_unsched and not new_unsched:
        events.append(_NODE_TAINT)
    if _allocatable_changed(old, new):
        events.append(_NODE_ALLOCATABLE)
    if _meta(old, "labels") != _meta(new, "labels"):
        events.append(_NODE_LABEL)
    if (_spec(old).get("taints") or []) != (_spec(new).get("taints") or []):
        events.append(_NODE_TAINT)
    # Heartbeat timestamps change on every status update: compare type → status only.
    if _condition_statuses(old) != _condition_statuses(new):
        events.append(_NODE_CONDITION)
    if _meta(old, "annotations") != _meta(new, "annotations"):
        events.append(_NODE_ANNOTATION)
    return events


_NODE_ALLOCATABLE = ClusterEvent(NODE, ActionType.UPDATE_NODE_ALLOCATABLE)
_NODE_LABEL = ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL)
_NODE_TAINT = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)
_NODE_CONDITION = ClusterEvent(NODE, ActionType.UPDATE_NODE_CONDITION)
_NODE_ANNOTATION = ClusterEvent(NODE, ActionType.UPDATE_NODE_ANNOTATION)


def _scaled_down(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    new_req = pod_requests(new)
    return any(name not in new_req or v > new_req[name] for name, v in pod_requests(old).items())


def pod_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ClusterEvent]:
    """The Pod update events of one pod update (never empty: falls back to plain Update).

    The resource is ASSIGNED_POD when ``new`` is bound, else UNSCHEDULED_POD.
    """
    resource = ASSIGNED_POD if _spec(new).get("nodeName") else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if _meta(old, "labels") != _meta(new, "labels"):
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(old, new):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if _spec(old).get("schedulingGates") and not _spec(new).get("schedulingGates"):
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(_spec(old).get("tolerations") or ()) != len(_spec(new).get("tolerations") or ()):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if not actions:
        # Only plugins registering the general Pod/Update hear of other changes.
        actions.append(ActionType.UPDATE)
    return [_POD_EVENTS[resource, a] for a in actions]


# Assigned pods are updated all the time (status): build their few events once.
_POD_EVENTS: dict[tuple[str, ActionType], ClusterEvent] = {
    (r, a): ClusterEvent(r, a)
    for r in (ASSIGNED_POD, UNSCHEDULED_POD)
    for a in (ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_SCALE_DOWN,
              ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
              ActionType.UPDATE_POD_TOLERATION, ActionType.UPDATE)
}


__all__ = [
    "ASSIGNED_POD", "ASSIGNED_POD_ADD", "ASSIGNED_POD_DELETE", "ASSIGNED_POD_UPDATE",
    "BACKOFF_COMPLETE", "ELASTIC_QUOTA", "FORCE_ACTIVATE", "NODE", "NODE_ADD", "NODE_DELETE",
    "NODE_METRIC", "NODE_RESOURCE_TOPOLOGY", "NODE_UPDATE", "POD", "POD_GROUP", "RESERVATION",
    "SCHEDULE_ATTEMPT_FAILURE", "UNSCHEDULABLE_TIMEOUT", "UNSCHEDULED_POD",
    "UNSCHEDULED_POD_ADD", "UNSCHEDULED_POD_DELETE", "UNSCHEDULED_POD_UPDATE", "WILDCARD",
    "WILDCARD_RESOURCE", "ActionType", "ClusterEvent", "ClusterEventWithHint", "HintFn",
    "QueueingHint", "node_update_events", "pod_update_events",
]
