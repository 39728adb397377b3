"""Kubernetes Events: core/v1 (client-go ``tools/record``, exported here) for koord-manager
and koordlet, as upstream; events.k8s.io/v1 with series (``tools/events``,
``pkg.events.events``) for koord-scheduler, as kube-scheduler.

    broadcaster = EventBroadcaster(client)
    recorder = broadcaster.new_recorder("koord-descheduler")
    recorder.eventf(pod, WARNING, "Evicting", "evicting pod %s: %s", name, why)
"""

from pkg.events.recorder import (
    NORMAL,
    WARNING,
    ClientSink,
    EventBroadcaster,
    EventRecorder,
    EventSink,
    object_reference,
)

__all__ = [
    "NORMAL",
    "WARNING",
    "ClientSink",
    "EventBroadcaster",
    "EventRecorder",
    "EventSink",
    "object_reference",
]
