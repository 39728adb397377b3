"""Evicting a pod through the Eviction API, for koordlet and the descheduler.

The request is upstream's `pkg/util/pod_evict.go` (`EvictPodByVersion`, policy/v1 only: every
supported Kubernetes serves it); around it, what its callers do with the answer: koordlet's
evictor (`pkg/koordlet/qosmanager/framework/context.go`, `Evictor`) and the descheduler's
(`pkg/descheduler/evictions/evictions.go`, `PodEvictor.Evict` with its dry run).

`PodEvictor.evict` posts `pods/<name>/eviction` with the pod's UID as a precondition, so a
re-created pod of the same name is never hit, and says how it went (`EvictionResult`): a 404
means the pod is gone already, a 429 that a PodDisruptionBudget does not allow the eviction
now, a 409 that the name now belongs to another pod. Each outcome but a gone pod is logged
and, with the caller's `EvictionEvents`, recorded as an event on the pod. In a dry run nothing
is sent and the pod counts as evicted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from pkg.client.errors import ApiError, is_conflict, is_not_found, is_too_many_requests
from pkg.client.resources import PODS
from pkg.client.rest import Client
from pkg.events.recorder import EventRecorder

log = logging.getLogger(__name__)

Pod = Mapping[str, Any]


class EvictionResult(Enum):
    EVICTED = "evicted"  # the API accepted it (in a dry run: it would have been asked)
    GONE = "gone"  # 404: the pod no longer exists, nothing is left to evict
    BLOCKED = "blocked"  # 429: a PodDisruptionBudget does not allow it now; try again later
    REPLACED = "replaced"  # 409: the UID precondition failed, the name is another pod's now
    FAILED = "failed"  # any other refusal, or no answer

    @property
    def done(self) -> bool:
        """Nothing of the pod is left to evict."""
        return self in (EvictionResult.EVICTED, EvictionResult.GONE)


@dataclass(frozen=True, slots=True)
class EvictionEvents:
    """The events a component records on the pods it evicts: their type and reasons (koordlet:
    Warning ``evictPodSuccess``/``evictPodFail``); ``failure`` None records none for failures."""

    type: str
    success: str
    failure: str | None = None


def pod_key(pod: Pod) -> str:
    md = pod.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


class EvictionClient(Protocol):
    """What ``evict_pod`` needs of a client (``Client``, or a scheduler plugin's ClientSet)."""

    def request(self, method: str, path: str, *, body: Any = None) -> Any: ...


def evict_pod(client: EvictionClient, pod: Pod,
              delete_options: Mapping[str, Any] | None = None) -> None:
    """POST ``pods/<name>/eviction`` (policy/v1 Eviction) with ``delete_options`` (the
    descheduler passes a PodMigrationJob's) and, unless they carry preconditions of their own,
    the pod's UID as precondition. Raises ``ApiError`` when the server refuses."""
    md = pod["metadata"]
    name, namespace = md["name"], md.get("namespace", "")
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    options = dict(delete_options or {})
    if md.get("uid") and not options.get("preconditions"):
        options["preconditions"] = {"uid": md["uid"]}
    if options:
        body["deleteOptions"] = options
    client.request("POST", PODS.path(namespace, name, "eviction"), body=body)


class PodEvictor:
    """Evicts pods and reports each outcome in the log and, given a recorder, as an event.

    With ``delete_when_refused`` a pod the Eviction API refuses for another reason than being
    gone or a PodDisruptionBudget is deleted instead, with the same UID precondition.
    """

    def __init__(self, client: Client, recorder: EventRecorder | None = None,
                 events: EvictionEvents | None = None, *, dry_run: bool = False,
                 delete_when_refused: bool = False) -> None:
        self.client = client
        self.recorder = recorder
        self.events = events
        self.dry_run = dry_run
        self.delete_when_refused = delete_when_refused

    def evict(self, pod: Pod, reason: str, message: str) -> EvictionResult:
        """Evicts ``pod``; ``reason`` goes to the log, ``message`` to the event."""
        key = pod_key(pod)
        if self.dry_run:
            log.info("evicted pod %s in dry run mode, reason: %s", key, reason)
            return EvictionResult.EVICTED
        try:
            self._evict_or_delete(pod)
        except ApiError as e:
            result = _result_of(e)
            if result is EvictionResult.GONE:  # nothing left to release, nothing to record
                log.debug("pod %s already gone (%s)", key, reason)
                return result
            if result is EvictionResult.BLOCKED:
                log.warning("evicting pod %s blocked by its disruption budget (%s): %s",
                            key, reason, e)
            elif result is EvictionResult.REPLACED:
                log.error("evict pod %s failed (%s): replaced by another pod of that name: %s",
                          key, reason, e)
            else:
                log.error("evict pod %s failed (%s): %s", key, reason, e)
            self._event(pod, False, message)
            return result
        self._event(pod, True, message)
        log.info("evict pod %s success, reason: %s", key, reason)
        return EvictionResult.EVICTED

    def _evict_or_delete(self, pod: Pod) -> None:
        try:
            evict_pod(self.client, pod)
        except ApiError as e:
            if not self.delete_when_refused or is_not_found(e) or is_too_many_requests(e):
                raise
            log.warning("eviction API refused pod %s (%s); deleting it", pod_key(pod), e)
            md = pod["metadata"]
            self.client.delete(PODS, md["name"], md.get("namespace", ""),
                               preconditions={"uid": md["uid"]} if md.get("uid") else None)

    def _event(self, pod: Pod, success: bool, message: str) -> None:
        if self.recorder is None or self.events is None:
            return
        reason = self.events.success if success else self.events.failure
        if reason is not None:
            self.recorder.event(pod, self.events.type, reason, message)


def _result_of(err: ApiError) -> EvictionResult:
    if is_not_found(err):
        return EvictionResult.GONE
    if is_too_many_requests(err):
        return EvictionResult.BLOCKED
    if is_conflict(err):
        return EvictionResult.REPLACED
    return EvictionResult.FAILED


__all__ = ["EvictionClient", "EvictionEvents", "EvictionResult", "PodEvictor", "evict_pod",
           "pod_key"]
