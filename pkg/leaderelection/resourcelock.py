"""The lock: a ``coordination.k8s.io/v1`` Lease holding the leader election record.

Corresponds to client-go ``tools/leaderelection/resourcelock`` (``LeaderElectionRecord``,
``LeaseLock``; the old ConfigMap/Endpoints locks are gone upstream too). Writes are conditional
on the Lease's resourceVersion, so of two candidates updating the same observed record only one
succeeds (the other gets 409 Conflict).

A lock may also offer ``watch()``: a stream of the record's changes (``LeaseLock`` watches its
Lease with ``fieldSelector=metadata.name=<name>``). Standby candidates use it to notice a
renewal, a release or a deletion within milliseconds instead of at their next poll; a lock
without it is simply polled, and so is a Lease that RBAC does not let us watch (upstream's
electors always poll, and upstream's scheduler and descheduler roles grant no watch).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from api.meta import parse_timestamp
from pkg.client.errors import ApiError
from pkg.client.resources import LEASES
from pkg.client.rest import Client, WatchStream

LEASES_LOCK = "leases"
_SELF_SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@dataclass(frozen=True)
class LeaderElectionRecord:
    """Who leads, since when, and for how long a renewal counts. Times are wall-clock
    seconds (the Lease stores them as RFC 3339 MicroTime)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: float | None = None
    renew_time: float | None = None
    leader_transitions: int = 0

    def to_lease_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"holderIdentity": self.holder_identity,
                                "leaseDurationSeconds": self.lease_duration_seconds,
                                "leaseTransitions": self.leader_transitions}
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        return spec

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any]) -> LeaderElectionRecord:
        return cls(holder_identity=spec.get("holderIdentity") or "",
                   lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
                   acquire_time=parse_timestamp(spec.get("acquireTime")),
                   renew_time=parse_timestamp(spec.get("renewTime")),
                   leader_transitions=int(spec.get("leaseTransitions") or 0))


def format_micro_time(t: float) -> str:
    """metav1.MicroTime: ``2006-01-02T15:04:05.000000Z``."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ResourceLock(Protocol):
    """What the elector needs of a lock. A lock may also offer ``watch() -> LockWatch``
    (optional, so not declared here): standbys then learn of changes as they happen instead of
    by polling."""

    identity: str

    def get(self) -> LeaderElectionRecord | None:
        """The current record; None when the lock object does not exist."""
        ...

    def create(self, record: LeaderElectionRecord) -> None: ...

    def update(self, record: LeaderElectionRecord) -> None:
        """Write, conditional on the version last read; raises ApiError 409 on a race."""
        ...

    def describe(self) -> str: ...


class LockWatch(Protocol):
    """An open watch on a lock (optional ``ResourceLock.watch()``). Iterating yields the
    record as it is now (first the current one, when the lock exists) and after every change,
    ``None`` when the lock object is deleted. Iteration ends, or raises ``ApiError``, when the
    watch ends; ``stop()`` ends it from any thread."""

    def __iter__(self) -> Iterator[LeaderElectionRecord | None]: ...

    def stop(self) -> None: ...


class LeaseWatch:
    """The events of a watch on one Lease, as records."""

    def __init__(self, stream: WatchStream) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[LeaderElectionRecord | None]:
        for event in self._stream:
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind in ("ADDED", "MODIFIED"):
                yield LeaderElectionRecord.from_lease_spec(obj.get("spec") or {})
            elif kind == "DELETED":
                yield None
            elif kind == "ERROR":  # e.g. 410 Expired: the caller opens a new watch
                raise ApiError.from_status(int(obj.get("code") or 500), obj)
            # BOOKMARK: nothing changed

    def stop(self) -> None:
        self._stream.stop()


class LeaseLock:
    """A Lease ``namespace/name`` written through a ``Client``."""

    def __init__(self, client: Client, namespace: str, name: str, identity: str,
                 timeout: float = 10.0) -> None:
        if not name:
            raise ValueError("leader election needs a lock name (--leader-elect-resource-name)")
        if not identity:
            raise ValueError("leader election needs an identity")
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timeout = timeout
        self._lease: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    def get(self) -> LeaderElectionRecord | None:
        try:
            lease = self.client.request("GET", LEASES.path(self.namespace, self.name),
                                        timeout=self.timeout)
        except ApiError as e:
            if e.status == 404:
                return None
            raise
        with self._lock:
            self._lease = lease
        return LeaderElectionRecord.from_lease_spec(lease.get("spec") or {})

    def create(self, record: LeaderElectionRecord) -> None:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": record.to_lease_spec()}
        lease = self.client.request("POST", LEASES.path(self.namespace), body=body,
                                    timeout=self.timeout)
        with self._lock:
            self._lease = lease

    def update(self, record: LeaderElectionRecord) -> None:
        with self._lock:
            lease = self._lease
        if lease is None:
            raise RuntimeError("lease not initialized: call get or create first")
        body = dict(lease)
        body["spec"] = {**(lease.get("spec") or {}), **record.to_lease_spec()}
        out = self.client.request("PUT", LEASES.path(self.namespace, self.name), body=body,
                                  timeout=self.timeout)
        with self._lock:
            self._lease = out

    def may_watch(self) -> bool:
        """Whether RBAC lets us watch this Lease, asked with a SelfSubjectAccessReview (which
        every authenticated user may create). Upstream's electors only poll, so upstream's
        roles (koord-scheduler's, koord-descheduler's) grant get/create/update on leases and
        no watch; a watch there would only be denied. A server that cannot answer: try."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": {
                      "namespace": self.namespace, "verb": "watch",
                      "group": LEASES.group, "resource": LEASES.plural, "name": self.name}}}
        try:
            out = self.client.request("POST", _SELF_SUBJECT_ACCESS_REVIEWS, body=review,
                                      timeout=self.timeout)
        except ApiError:
            return True
        return bool((out.get("status") or {}).get("allowed"))

    def watch(self) -> LeaseWatch:
        """Watch this Lease from its current state: the server first sends it as ADDED (when
        it exists), then every change. The server ends the watch after 5-10 minutes, as
        client-go's reflector asks, so a silently dead connection is not trusted forever.
        Where RBAC grants no watch (``may_watch``) it raises PermissionError instead of
        sending a request the server would deny: the elector then polls, as upstream's."""
        if not self.may_watch():
            raise PermissionError(f"RBAC grants no watch on lease {self.describe()}")
        stream = self.client.watch(LEASES, self.namespace,
                                   field_selector=f"metadata.name={self.name}",
                                   timeout_seconds=random.randint(300, 600))
        return LeaseWatch(stream)


__all__ = [
    "LEASES_LOCK", "LeaderElectionRecord", "LeaseLock", "LeaseWatch", "LockWatch",
    "ResourceLock", "format_micro_time",
]
