"""Pod eviction through the Eviction API, shared by koordlet and the descheduler (upstream
``pkg/util/pod_evict.go`` and the callers' outcome handling; see ``evictions``).

    evictor = PodEvictor(client, recorder, EvictionEvents(WARNING, "evictPodSuccess"))
    if evictor.evict(pod, reason, message).done:
        ...
"""

from pkg.evictions.evictions import (
    EvictionEvents,
    EvictionResult,
    PodEvictor,
    evict_pod,
    pod_key,
)

__all__ = ["EvictionEvents", "EvictionResult", "PodEvictor", "evict_pod", "pod_key"]
