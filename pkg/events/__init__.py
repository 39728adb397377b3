"""Kubernetes Events for every component (client-go ``tools/record``).

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
