"""The evictor shared by cpuevict and memoryevict: upstream `Evictor` of
`pkg/koordlet/qosmanager/framework/context.go`, with the event reasons of
`pkg/koordlet/qosmanager/helpers/reason.go`.

Pods are evicted through `pkg.evictions` (the Eviction API with a UID precondition). This
implementation has no CRI runtime to stop containers through, so where upstream's default
(`--only-evict-by-api=false`) kills the containers, a pod the Eviction API cannot evict for
another reason than a PodDisruptionBudget (429) is deleted instead; with `--only-evict-by-api`
it never is.

Evicted pod UIDs are remembered for 2 minutes in the context, shared by both evictors, so a
pod whose deletion is still in flight is counted as released and not evicted again. A success
is recorded as a Warning event `evictPodSuccess`, a failure as `evictPodFail`, and in
`koordlet_pod_eviction`; each attempt is an audit event (verbose 0) first, as upstream. The
event's message is upstream's: `evict Pod:<namespace>/<name>, reason: evicted, message: trigger
by koordlet feature <feature>, kill pod: <name>`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from koordlet.audit import auditor as audit
from koordlet.audit.event_log import TYPE_POD
from koordlet.metrics.metrics import record_pod_eviction
from koordlet.qosmanager.framework import Context, KubeDict
from pkg.events.recorder import WARNING
from pkg.evictions import EvictionEvents, EvictionResult, PodEvictor, pod_key

logger = logging.getLogger(__name__)

EVICTED_POD_TTL_SECONDS = 120.0
EVICT_POD_SUCCESS = "evictPodSuccess"
EVICT_POD_FAIL = "evictPodFail"
EVENTS = EvictionEvents(WARNING, EVICT_POD_SUCCESS, EVICT_POD_FAIL)
# The reason upstream's tasks give every eviction (`EvictedStr`); the feature is in the message.
EVICTED = "evicted"


def evict_reason(feature: str) -> str:
    """Upstream's reason string for a pod evicted by a koordlet feature gate."""
    return f"trigger by koordlet feature {feature}"


@dataclass(slots=True)
class EvictTask:
    """What one feature wants released in a round: an amount per target (upstream's release
    target and resource, such as `podUsed/memory` or `podResourceRequest/kubernetes.io/mid-cpu`),
    and its victims in eviction order, each with what its eviction releases per target of the
    round. The task is done once every target of `release` is covered."""

    reason: str
    release: dict[str, int]
    victims: list[tuple[KubeDict, dict[str, int]]]

    def covered(self, released: dict[str, int]) -> bool:
        return all(released.get(target, 0) >= amount for target, amount in self.release.items())


class Evictor:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        # Without a client koordlet only logs what it would evict.
        self.pods = None if ctx.client is None else PodEvictor(
            ctx.client, ctx.event_recorder, EVENTS,
            delete_when_refused=not ctx.config.only_evict_by_api)

    def is_evicted(self, pod: KubeDict) -> bool:
        evicted, now = self.ctx.evicted_pods, self.ctx.clock.monotonic()
        for uid in [uid for uid, expiry in list(evicted.items()) if expiry <= now]:
            evicted.pop(uid, None)
        return (pod.get("metadata") or {}).get("uid", "") in evicted

    def evict(self, pod: KubeDict, strategy: str, reason: str, message: str) -> bool:
        """Evicts `pod` unless it already was; True when it is (or is being) evicted."""
        if self.is_evicted(pod):
            logger.debug("pod %s already evicted (%s)", pod_key(pod), reason)
            return True
        if self.pods is None:
            logger.error("cannot evict pod %s (%s): koordlet has no API client", pod_key(pod),
                         reason)
            return False
        md = pod.get("metadata") or {}
        name, namespace = md.get("name", ""), md.get("namespace", "")
        audit.event(0, reason, message, kind=TYPE_POD, namespace=namespace, name=name)
        result = self.pods.evict(
            pod, reason, f"evict Pod:{namespace}/{name}, reason: {EVICTED}, message: {message}")
        if result is EvictionResult.EVICTED:
            self.ctx.evicted_pods[md.get("uid", "")] = (
                self.ctx.clock.monotonic() + EVICTED_POD_TTL_SECONDS)
            record_pod_eviction(namespace, name, strategy, reason)
        return result.done

    def evict_tasks(self, tasks: Sequence[EvictTask], strategy: str) -> bool:
        """Runs the tasks of one round in order (upstream `KillAndEvictPods`). What is released
        is counted per target, across tasks: a victim credits every target its amounts name, so
        a later task only evicts what the earlier ones left. A pod picked by one task is skipped
        by the others; one already evicted counts without a new eviction. True when any pod
        was newly evicted."""
        released: dict[str, int] = {}
        evicted_any, picked = False, set[str]()
        for task in tasks:
            for pod, amounts in task.victims:
                if task.covered(released):
                    break
                md = pod.get("metadata") or {}
                uid = md.get("uid", "")
                if uid in picked:
                    continue
                if self.is_evicted(pod):
                    done = True
                else:
                    message = f"{task.reason}, kill pod: {md.get('name', '')}"
                    done = self.evict(pod, strategy, task.reason, message)
                    evicted_any = evicted_any or done
                if done:
                    picked.add(uid)
                    for target, amount in amounts.items():
                        released[target] = released.get(target, 0) + amount
        return evicted_any
