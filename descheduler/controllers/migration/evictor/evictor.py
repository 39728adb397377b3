"""How a PodMigrationJob's pod is evicted: the Eviction, Delete and SoftEviction evictors and the
interpreter choosing one per pod behind one shared rate limit.

Corresponds to koordinator ``pkg/descheduler/controllers/migration/evictor`` (``interpreter.go``,
``evictor_native.go``, ``evictor_delete.go``, ``evictor_soft.go``). The policy is the pod's label
``koordinator.sh/evict-policy``, else the job's, else ``evictionPolicy`` from the args; an
unknown name falls back to that default. Every attempt first takes a token from one bucket
(``evictQPS``, ``evictBurst``): when none is left it fails with ``TooManyEvictions`` and the
job is retried later. Each attempt past the rate limit counts in ``descheduler_pods_evicted``; a
success records the event ``Descheduled`` on the pod.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from api.extension.eviction import ANNOTATION_SOFT_EVICTION, SoftEvictionSpec, format_soft_eviction
from api.extension.objects import annotations_of, labels_of, metadata_of, spec_of
from api.meta import format_timestamp
from descheduler.controllers.migration.util import (
    ANNOTATION_EVICT_REASON,
    ANNOTATION_EVICT_TRIGGER,
    LABEL_EVICT_POLICY,
)
from descheduler.metrics import RESULT_ERROR, RESULT_SUCCESS, record_eviction
from pkg.client.errors import retry_on_conflict
from pkg.client.resources import PODS
from pkg.client.rest import Client
from pkg.events.recorder import NORMAL
from pkg.evictions.evictions import evict_pod
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.flowcontrol import TokenBucket
from pkg.util.validation import go_quote

log = logging.getLogger(__name__)

Obj = Mapping[str, Any]

EVICTION = "Eviction"
DELETE = "Delete"
SOFT_EVICTION = "SoftEviction"

REASON_DESCHEDULED = "Descheduled"


class TooManyEvictionsError(Exception):
    """The shared eviction rate limit has no token left (upstream ``ErrTooManyEvictions``)."""

    def __init__(self) -> None:
        super().__init__("TooManyEvictions")


class Recorder(Protocol):
    """Where events go (``pkg.events.recorder.EventRecorder``)."""

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None: ...


class PodEvictor(Protocol):
    """One way of evicting a job's pod; raises when the API refuses."""

    def evict(self, job: Obj, pod: Obj) -> None: ...


def _delete_options(job: Obj) -> Mapping[str, Any] | None:
    return spec_of(job).get("deleteOptions")


def trigger_and_reason(annotations: Mapping[str, str]) -> tuple[str, str]:
    """The plugin that asked for the job, and why (the trigger, else ``NotSet``, when the job
    carries no reason)."""
    trigger = annotations.get(ANNOTATION_EVICT_TRIGGER, "")
    reason = annotations.get(ANNOTATION_EVICT_REASON, "") or trigger or "NotSet"
    return trigger, reason


class NativeEvictor:
    """A policy/v1 Eviction with the job's delete options (PodDisruptionBudgets apply)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def evict(self, job: Obj, pod: Obj) -> None:
        evict_pod(self.client, pod, _delete_options(job))


class DeleteEvictor:
    """Deletes the pod with the job's delete options (no PodDisruptionBudget check)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def evict(self, job: Obj, pod: Obj) -> None:
        md = metadata_of(pod)
        options = _delete_options(job) or {}
        log.info("Try to delete Pod %s/%s with MigrationJob %s", md.get("namespace"),
                 md.get("name"), metadata_of(job).get("name"))
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **options}
        self.client.request("DELETE", PODS.path(md.get("namespace", ""), md["name"]),
                            body=body)


class SoftEvictor:
    """Marks the pod with ``scheduling.koordinator.sh/soft-eviction`` and leaves the eviction to
    whoever watches for it."""

    def __init__(self, client: Client, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.clock = clock

    def evict(self, job: Obj, pod: Obj) -> None:
        trigger, reason = trigger_and_reason(annotations_of(job))
        spec = SoftEvictionSpec.model_validate({
            "timestamp": format_timestamp(self.clock.now()),
            "deleteOptions": _delete_options(job),
            "initiator": trigger,
            "reason": reason,
        })
        md = metadata_of(pod)
        patch = {"metadata": {"annotations": {ANNOTATION_SOFT_EVICTION:
                                              format_soft_eviction(spec)}}}
        retry_on_conflict(lambda: self.client.patch(PODS, md["name"], patch,
                                                    md.get("namespace", "")))


class EvictorInterpreter:
    """Chooses the evictor for each pod and applies the shared rate limit."""

    def __init__(self, evictors: Mapping[str, PodEvictor], default_policy: str,
                 qps: float, burst: int, recorder: Recorder | None,
                 clock: Clock = REAL_CLOCK) -> None:
        if default_policy not in evictors:
            raise ValueError(f"unsupported eviction policy {default_policy!r}")
        self.evictors = dict(evictors)
        self.default = evictors[default_policy]
        # Validation keeps evictQPS above 0; the bucket would treat 0 as no limit at all.
        self.bucket = TokenBucket(qps, burst, clock)
        self.recorder = recorder

    @classmethod
    def new(cls, client: Client, default_policy: str, qps: float, burst: int,
            recorder: Recorder | None, clock: Clock = REAL_CLOCK) -> EvictorInterpreter:
        evictors: dict[str, PodEvictor] = {
            EVICTION: NativeEvictor(client), DELETE: DeleteEvictor(client),
            SOFT_EVICTION: SoftEvictor(client, clock)}
        return cls(evictors, default_policy, qps, burst, recorder, clock)

    def _evictor_for(self, job: Obj, pod: Obj) -> PodEvictor:
        policy = labels_of(pod).get(LABEL_EVICT_POLICY) or labels_of(job).get(LABEL_EVICT_POLICY)
        return self.evictors.get(policy or "") or self.default

    def evict(self, job: Obj, pod: Obj) -> None:
        """Evict ``pod`` for ``job``; raises ``TooManyEvictionsError`` or the API's error."""
        if not self.bucket.try_accept():
            raise TooManyEvictionsError()
        trigger, reason = trigger_and_reason(annotations_of(job))
        md = metadata_of(pod)
        namespace, node = md.get("namespace", ""), spec_of(pod).get("nodeName", "")
        try:
            self._evictor_for(job, pod).evict(job, pod)
        except Exception:
            record_eviction(RESULT_ERROR, trigger, namespace, node)
            raise
        record_eviction(RESULT_SUCCESS, trigger, namespace, node)
        log.info("Evicted pod %s/%s, reason %s, trigger %s, node %s", namespace,
                 md.get("name"), reason, trigger, node)
        if self.recorder is not None:
            self.recorder.event(pod, NORMAL, REASON_DESCHEDULED,
                                f"Pod evicted from node {go_quote(node)} by the reason "
                                f"{go_quote(reason)}")


__all__ = ["DELETE", "EVICTION", "REASON_DESCHEDULED", "SOFT_EVICTION", "DeleteEvictor",
           "EvictorInterpreter", "NativeEvictor", "PodEvictor", "Recorder", "SoftEvictor",
           "TooManyEvictionsError", "trigger_and_reason"]
