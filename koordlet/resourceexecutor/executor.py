"""The resource update executor: upstream `pkg/koordlet/resourceexecutor/executor.go`.

One instance per koordlet. Cacheable updates skip a file whose last written value is the same
and younger than `--resource-force-update-seconds`, so a 1 s reconcile loop does not rewrite
unchanged files; the rewrite after that age repairs values changed behind koordlet's back.
Unsupported resources and missing cgroup dirs (a pod that just went away) are logged and
ignored, as upstream does; validator and kernel refusals are returned to the caller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from koordlet.resourceexecutor.updater import CgroupUpdater
from koordlet.util.system.cgroup import (
    CgroupDirNotExistError,
    CgroupError,
    ResourceUnsupportedError,
)
from pkg.util.clock import Clock, RealClock

logger = logging.getLogger(__name__)

DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS = 60
# Upstream's cache entry expiry (2 min): bounds the cache to recently written files.
CACHE_EXPIRE_SECONDS = 120


@dataclass(slots=True)
class _CacheEntry:
    value: str
    written_at: float


class ResourceUpdateExecutor:
    def __init__(
        self,
        clock: Clock | None = None,
        force_update_seconds: float = DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS,
    ) -> None:
        self._clock = clock or RealClock()
        self._force_update_seconds = force_update_seconds
        self._cache: dict[str, _CacheEntry] = {}
        self._last_gc = self._clock.monotonic()
        self._lock = threading.Lock()

    def update(self, cacheable: bool, updater: CgroupUpdater) -> bool:
        """Applies one value; True when the file was written. Raises on refusal."""
        with self._lock:
            return self._update(cacheable, updater, self._clock.monotonic())

    def update_batch(self, cacheable: bool, updaters: Iterable[CgroupUpdater]) -> list[CgroupError]:
        """Applies each value in order, carrying on past failures; returns the failures."""
        errors: list[CgroupError] = []
        with self._lock:
            # One clock reading for the cache checks of the batch: a value written during it
            # is remembered at its own time, later than this, so it is not written twice.
            now = self._clock.monotonic()
            for updater in updaters:
                try:
                    self._update(cacheable, updater, now)
                except CgroupError as e:
                    logger.warning("cgroup update failed: %s", e)
                    errors.append(e)
        return errors

    def leveled_update_batch(self, levels: Sequence[Sequence[CgroupUpdater]]) -> list[CgroupError]:
        """Writes a tree of values, levels ordered parent first (kube-QoS, pod, container).

        Top-down, each value that needs writing is merged (quota/memory.min,low,high only grow,
        cpusets gain the union) so a parent is never tighter than a child's new value; other
        resources are written exactly right away. Bottom-up, the merged ones get their exact
        values, so children are narrowed before their parents. Values the cache holds as
        recently written are skipped, as for cacheable updates. Returns the failures.
        """
        errors: list[CgroupError] = []
        with self._lock:
            now = self._clock.monotonic()  # for the cache checks, as in update_batch
            needs_update = self._needs_update
            pending: list[list[CgroupUpdater]] = []
            for level in levels:
                remaining: list[CgroupUpdater] = []
                for updater in level:
                    if not needs_update(updater, now):
                        continue
                    try:
                        merged = updater.merge_update()
                        if merged is None:
                            updater.update()
                            self._remember(updater)
                        else:
                            remaining.append(updater)
                    except CgroupError as e:
                        self._record_failure(updater, e, errors)
                pending.append(remaining)
            for level in reversed(pending):
                for updater in level:
                    try:
                        updater.update()
                        self._remember(updater)
                    except CgroupError as e:
                        self._record_failure(updater, e, errors)
        return errors

    def _update(self, cacheable: bool, updater: CgroupUpdater, now: float) -> bool:
        if cacheable and not self._needs_update(updater, now):
            return False
        try:
            written = updater.update()
        except (ResourceUnsupportedError, CgroupDirNotExistError) as e:
            logger.debug("cgroup update skipped: %s", e)
            return False
        if cacheable:
            self._remember(updater)
        return written

    def _record_failure(
        self, updater: CgroupUpdater, error: CgroupError, errors: list[CgroupError]
    ) -> None:
        self._cache.pop(updater.path, None)
        if isinstance(error, ResourceUnsupportedError | CgroupDirNotExistError):
            logger.debug("cgroup update skipped: %s", error)
            return
        logger.warning("cgroup update failed: %s", error)
        errors.append(error)

    def _needs_update(self, updater: CgroupUpdater, now: float) -> bool:
        entry = self._cache.get(updater.path)
        if entry is None or entry.value != updater.value:
            return True
        return now - entry.written_at >= self._force_update_seconds

    def _remember(self, updater: CgroupUpdater) -> None:
        now = self._clock.monotonic()
        self._cache[updater.path] = _CacheEntry(updater.value, now)
        if now - self._last_gc >= CACHE_EXPIRE_SECONDS:
            self._last_gc = now
            expired = [
                k for k, e in self._cache.items() if now - e.written_at >= CACHE_EXPIRE_SECONDS
            ]
            for key in expired:
                del self._cache[key]
