"""Object limiters: how often one workload, or one namespace, may lose a pod to migration.

Corresponds to the object limiters of koordinator
``pkg/descheduler/controllers/migration/controller.go`` (``filterLimitedObject``,
``trackEvictedPod``, ``track``). Per configured type with a positive ``duration`` (``workload``:
keyed by the controller owner's UID; ``namespace``: by the namespace), each eviction takes a
token from the key's bucket, which refills at ``maxMigrating / duration`` per second and holds
``max(burst, 1)``; a pod is limited while its bucket holds less than one token. Buckets nobody
used for ``1.5 × duration`` are forgotten (upstream's go-cache expiry).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from api.extension.objects import metadata_of
from descheduler.apis.config.args import (
    LIMIT_NAMESPACE,
    LIMIT_WORKLOAD,
    MigrationControllerArgs,
    MigrationObjectLimiter,
)
from descheduler.controllers.migration.controllerfinder import ControllerFinder, controller_of
from descheduler.controllers.migration.util import get_max_migrating
from descheduler.framework.types import Obj
from pkg.util.clock import Clock
from pkg.util.flowcontrol import TokenBucket

log = logging.getLogger(__name__)

# How long past its duration an unused bucket is kept.
EXPIRY_FACTOR = 1.5


@dataclass(slots=True)
class _Bucket:
    bucket: TokenBucket
    last_used: float


class ObjectLimiters:
    def __init__(self, args: MigrationControllerArgs, finder: ControllerFinder,
                 clock: Clock) -> None:
        self.args = args
        self.finder = finder
        self.clock = clock
        self._limiters = {kind: limiter for kind, limiter in args.object_limiters.items()
                          if kind in (LIMIT_WORKLOAD, LIMIT_NAMESPACE) and limiter.duration > 0}
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(kind: str, pod: Obj) -> str | None:
        if kind == LIMIT_NAMESPACE:
            return metadata_of(pod).get("namespace") or ""
        ref = controller_of(pod)
        return (ref.get("uid") or None) if ref is not None else None

    def _max_migrating(self, kind: str, limiter: MigrationObjectLimiter, pod: Obj) -> int:
        if kind == LIMIT_NAMESPACE:
            # Only an int counts for a namespace; a percentage of nothing is 0.
            value = limiter.max_migrating
            return value if isinstance(value, int) else 0
        replicas = self.finder.expected_replicas(pod)
        if replicas is None:
            return 0
        value = limiter.max_migrating
        return get_max_migrating(replicas, value if value is not None
                                 else self.args.max_migrating_per_workload)

    def _expire(self, now: float) -> None:
        for key in [key for key, entry in self._buckets.items()
                    if now - entry.last_used >= EXPIRY_FACTOR * self._limiters[key[0]].duration]:
            del self._buckets[key]

    def limited(self, pod: Obj) -> bool:
        """Whether ``pod``'s workload or namespace lost pods too recently to lose one more."""
        now = self.clock.monotonic()
        with self._lock:
            self._expire(now)
            for kind in self._limiters:
                key = self._key(kind, pod)
                entry = self._buckets.get((kind, key)) if key is not None else None
                if entry is not None and entry.bucket.tokens() < 1:
                    log.info("The %s %s of pod %s/%s has been frequently descheduled recently "
                             "and needs to be limited for a period of time", kind, key,
                             metadata_of(pod).get("namespace"), metadata_of(pod).get("name"))
                    return True
        return False

    def track(self, pod: Obj) -> None:
        """Count an eviction of ``pod`` against its workload's and namespace's buckets."""
        now = self.clock.monotonic()
        with self._lock:
            self._expire(now)
            for kind, limiter in self._limiters.items():
                key = self._key(kind, pod)
                if key is None:
                    continue
                max_migrating = self._max_migrating(kind, limiter, pod)
                if max_migrating <= 0:
                    continue
                qps = max_migrating / limiter.duration
                burst = max(limiter.burst, 1)
                entry = self._buckets.get((kind, key))
                if entry is None:
                    entry = self._buckets[(kind, key)] = _Bucket(
                        TokenBucket(qps, burst, self.clock), now)
                elif entry.bucket.qps != qps or entry.bucket.burst != burst:
                    entry.bucket.tokens()  # refill at the old rate up to now
                    entry.bucket.qps, entry.bucket.burst = qps, burst
                entry.last_used = now
                if not entry.bucket.try_accept():
                    log.info("The %s %s has been frequently descheduled recently and needs to "
                             "be limited for a period of time", kind, key)
