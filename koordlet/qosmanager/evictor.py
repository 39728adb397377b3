"""The evictor shared by cpuevict and memoryevict: upstream `qosmanager/framework/evictor.go`
and `plugins/util/evict.go` (koordlet.md 7.5).

A pod is evicted through the Eviction API (`POST pods/<name>/eviction`, policy/v1, with a UID
precondition so a re-created pod of the same name is never hit). This implementation has no CRI
runtime to stop containers through, so where upstream's default (`--only-evict-by-api=false`)
kills the containers, a pod the Eviction API cannot evict for another reason than a
PodDisruptionBudget (429) is deleted instead; with `--only-evict-by-api` it never is.

Evicted pod UIDs are remembered for 2 minutes in the context, shared by both evictors, so a
pod whose deletion is still in flight is counted as released and not evicted again. A success
is recorded as a Warning event `evictPodSuccess`, a failure as `evictPodFail`, and in
`koordlet_pod_eviction`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from koordlet.metrics.metrics import record_pod_eviction
from koordlet.qosmanager.framework import Context, KubeDict
from pkg.client.errors import ApiError
from pkg.client.resources import PODS

logger = logging.getLogger(__name__)

EVICTED_POD_TTL_SECONDS = 120.0
EVICT_POD_SUCCESS = "evictPodSuccess"
EVICT_POD_FAIL = "evictPodFail"


def evict_reason(feature: str) -> str:
    """Upstream's reason string for a pod evicted by a koordlet feature gate."""
    return f"trigger by koordlet feature {feature}"


def _pod_key(pod: KubeDict) -> str:
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


class Evictor:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def is_evicted(self, pod: KubeDict) -> bool:
        evicted, now = self.ctx.evicted_pods, self.ctx.clock.monotonic()
        for uid in [uid for uid, expiry in list(evicted.items()) if expiry <= now]:
            evicted.pop(uid, None)
        return (pod.get("metadata") or {}).get("uid", "") in evicted

    def evict(self, pod: KubeDict, strategy: str, reason: str, message: str) -> bool:
        """Evicts `pod` unless it already was; True when it is (or is being) evicted."""
        if self.is_evicted(pod):
            logger.debug("pod %s already evicted (%s)", _pod_key(pod), reason)
            return True
        md = pod.get("metadata") or {}
        name, namespace = md.get("name", ""), md.get("namespace", "")
        event_message = f"evict Pod:{name}, reason: {reason}, message: {message}"
        client = self.ctx.client
        if client is None:
            logger.error("cannot evict pod %s (%s): koordlet has no API client", _pod_key(pod),
                         reason)
            return False
        try:
            self._evict_or_delete(pod)
        except ApiError as e:
            if e.status == 404:  # already gone: nothing left to release
                return True
            self._event(pod, EVICT_POD_FAIL, event_message)
            if e.status == 429:
                logger.warning("evicting pod %s blocked by its disruption budget (%s): %s",
                               _pod_key(pod), reason, e)
            else:
                logger.error("evict pod %s failed (%s): %s", _pod_key(pod), reason, e)
            return False
        expiry = self.ctx.clock.monotonic() + EVICTED_POD_TTL_SECONDS
        self.ctx.evicted_pods[md.get("uid", "")] = expiry
        self._event(pod, EVICT_POD_SUCCESS, event_message)
        record_pod_eviction(namespace, name, strategy, reason)
        logger.info("evict pod %s success, reason: %s", _pod_key(pod), reason)
        return True

    def evict_until_released(
        self, victims: Iterable[tuple[KubeDict, int]], release: int, strategy: str, reason: str,
        message: str,
    ) -> bool:
        """Evicts sorted `(pod, amount)` victims until their amounts cover `release`; a pod
        already evicted counts without a new eviction. True when any pod was newly evicted."""
        released, evicted_any = 0, False
        for pod, amount in victims:
            if released >= release:
                break
            if self.is_evicted(pod):
                released += amount
                continue
            name = (pod.get("metadata") or {}).get("name", "")
            if self.evict(pod, strategy, reason, f"{message}, kill pod: {name}"):
                released += amount
                evicted_any = True
        return evicted_any

    def _evict_or_delete(self, pod: KubeDict) -> None:
        client = self.ctx.client
        assert client is not None
        md = pod["metadata"]
        name, namespace = md["name"], md.get("namespace", "")
        preconditions = {"uid": md["uid"]} if md.get("uid") else None
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if preconditions:
            body["deleteOptions"] = {"preconditions": preconditions}
        try:
            client.request("POST", PODS.path(namespace, name, "eviction"), body=body)
        except ApiError as e:
            if e.status in (404, 429) or self.ctx.config.only_evict_by_api:
                raise
            logger.warning("eviction API refused pod %s (%s); deleting it", _pod_key(pod), e)
            client.delete(PODS, name, namespace, preconditions=preconditions)

    def _event(self, pod: KubeDict, reason: str, message: str) -> None:
        if self.ctx.event_recorder is not None:
            self.ctx.event_recorder.event(pod, "Warning", reason, message)
