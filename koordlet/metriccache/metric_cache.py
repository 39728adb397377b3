"""The koordlet metric cache (upstream ``pkg/koordlet/metriccache``: ``metric_cache.go``,
``tsdb_storage.go``, ``kv_storage.go``): a time-series store with retention and GC under a
byte budget, plus a KV map.

Why ring buffers (``array.array``, read through numpy views) rather than sqlite in memory:
koordlet's write pattern is a few hundred series appended once per second and read by "window
over one series" queries. A ring buffer per
series makes an append O(1) with no SQL round trip, makes retention structural (old points are
overwritten), and makes memory exactly computable — 16 bytes a point (int64 ms timestamp +
float64 value) times each series' capacity — so the ``--tsdb-max-bytes`` budget is enforced by
arithmetic, not estimated. Buffers start small and double up to ``retention / interval`` points,
so short-lived pods do not pre-allocate a full window.

When a new buffer would exceed the budget, the least recently appended series are dropped first
(pods that went away stop appending, so they go before live ones). ``gc`` drops points older
than the retention and series left empty, as upstream's periodic GC does.
"""

from __future__ import annotations

import math
import threading
import time
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from koordlet.metriccache import aggregate, metric_types

_POINT_BYTES = 16
# dict entry, key tuple, numpy headers: a fixed per-series cost counted against the budget.
_SERIES_OVERHEAD_BYTES = 512
_INITIAL_CAPACITY = 64
# Upstream's TSDB accepts appends up to one minute out of order.
OUT_OF_ORDER_WINDOW_MS = 60_000


@dataclass(slots=True)
class MetricCacheConfig:
    """Flags of upstream ``metriccache/config.go`` that shape the store."""

    metric_gc_interval_seconds: int = 300
    metric_expire_seconds: int = 1800
    tsdb_max_bytes: int = 104857600
    # Collect interval: sets the largest ring a series needs for its retention.
    collect_res_used_interval_seconds: float = 1.0

    def max_points(self) -> int:
        return math.ceil(self.metric_expire_seconds / self.collect_res_used_interval_seconds) + 1


class MetricSample(NamedTuple):
    """One point. A NamedTuple, not a frozen dataclass: collectors build thousands a tick and a
    frozen dataclass's __init__ costs ~4× a tuple's."""

    kind: str
    properties: Mapping[str, str]
    timestamp: float  # seconds since the epoch
    value: float


@dataclass(slots=True)
class QueryResult:
    """Aggregations of one series over a window (upstream ``AggregateResult``)."""

    timestamps: np.ndarray
    values: np.ndarray

    def value(self, kind: str) -> float:
        return aggregate.aggregate(kind, self.timestamps, self.values)

    def count(self) -> int:
        return len(self.values)

    def time_range_seconds(self) -> float:
        """Newest − oldest point (upstream ``TimeRangeDuration``), for cold-start filters."""
        if len(self.timestamps) == 0:
            return 0.0
        return float(self.timestamps.max() - self.timestamps.min()) / 1000.0


@dataclass(slots=True)
class _Series:
    """A ring of points. ``array.array`` rather than numpy for storage: an append writes two
    scalars, which costs ~30 ns into an array against ~180 ns into an ndarray; reads wrap the
    same memory in zero-copy numpy views."""

    key: tuple[Any, ...]
    ts: array
    val: array
    start: int = 0
    size: int = 0
    last_ms: int = -(2**62)
    seq: int = 0  # the cache's append round at the last append: eviction order

    @property
    def capacity(self) -> int:
        return len(self.ts)

    def views(self) -> tuple[np.ndarray, np.ndarray]:
        return np.frombuffer(self.ts, np.int64), np.frombuffer(self.val, np.float64)

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        ts, val = self.views()
        end = self.start + self.size
        if end <= self.capacity:
            return ts[self.start : end], val[self.start : end]
        wrap = end - self.capacity
        return (
            np.concatenate((ts[self.start :], ts[:wrap])),
            np.concatenate((val[self.start :], val[:wrap])),
        )


def _rings(capacity: int) -> tuple[array, array]:
    zeros = bytes(capacity * 8)
    return array("q", zeros), array("d", zeros)


def _key(kind: str, properties: Mapping[str, str]) -> tuple[Any, ...]:
    if len(properties) <= 1:  # most series: no sort needed (this runs per sample per tick)
        return (kind, *properties.items())
    return (kind, *sorted(properties.items()))


@dataclass
class MetricCache:
    """Thread-safe: collectors append from their loops while the reporter and qosmanager read."""

    config: MetricCacheConfig = field(default_factory=MetricCacheConfig)
    _series: dict[tuple[Any, ...], _Series] = field(default_factory=dict, init=False)
    _kv: dict[str, Any] = field(default_factory=dict, init=False)
    _bytes: int = field(default=0, init=False)
    _seq: int = field(default=0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    # -- TSDB ---------------------------------------------------------------------------------

    def append(self, samples: Iterable[MetricSample]) -> None:
        """Appends one round of samples (one "transaction" per collector round upstream).

        Every sample is validated before any is stored, so a bad round stores nothing. Only a
        sample that would start a series is checked against its kind's schema: a key holds
        the kind and the property names, so one that names a stored series was checked when
        that series began. (This loop runs for every sample of every tick, hence inline.)
        """
        batch = samples if isinstance(samples, list) else list(samples)
        validate = metric_types.validate
        max_points = self.config.max_points()
        with self._lock:
            series_of = self._series
            targets: list[Any] = []  # a _Series each, once the missing ones begin
            missing: list[tuple[int, tuple[Any, ...]]] = []
            for s in batch:
                key = _key(s.kind, s.properties)
                series = series_of.get(key)
                if series is None:
                    validate(s.kind, s.properties)
                    missing.append((len(targets), key))
                targets.append(series)
            for i, key in missing:  # all valid: now the new series may begin
                targets[i] = series_of.get(key) or self._new_series_locked(key)
            self._seq += 1
            seq = self._seq
            last_t, ts_ms = None, 0
            for s, series in zip(batch, targets):
                if s.timestamp != last_t:  # a round's samples mostly share one timestamp
                    last_t = s.timestamp
                    ts_ms = int(last_t * 1000)
                if ts_ms < series.last_ms - OUT_OF_ORDER_WINDOW_MS:
                    continue  # too far out of order: dropped, as upstream's TSDB rejects it
                cap = len(series.ts)
                if series.size == cap:
                    if cap < max_points:
                        self._grow_locked(series)
                        cap = len(series.ts)
                    else:
                        series.start = (series.start + 1) % cap
                        series.size -= 1
                idx = (series.start + series.size) % cap
                series.ts[idx] = ts_ms
                series.val[idx] = s.value
                series.size += 1
                if ts_ms > series.last_ms:
                    series.last_ms = ts_ms
                series.seq = seq

    def _new_series_locked(self, key: tuple[Any, ...]) -> _Series:
        cap = min(_INITIAL_CAPACITY, self.config.max_points())
        self._reserve_locked(cap * _POINT_BYTES + _SERIES_OVERHEAD_BYTES, keep=key)
        series = _Series(key, *_rings(cap))
        self._series[key] = series
        self._bytes += cap * _POINT_BYTES + _SERIES_OVERHEAD_BYTES
        return series

    def _grow_locked(self, series: _Series) -> None:
        new_cap = min(series.capacity * 2, self.config.max_points())
        extra = (new_cap - series.capacity) * _POINT_BYTES
        self._reserve_locked(extra, keep=series.key)
        ts, val = series.ordered()
        series.ts, series.val = _rings(new_cap)
        new_ts, new_val = series.views()
        new_ts[: series.size] = ts
        new_val[: series.size] = val
        series.start = 0
        self._bytes += extra

    def _reserve_locked(self, need: int, keep: tuple[Any, ...]) -> None:
        """Drops least recently appended series until ``need`` more bytes fit the budget."""
        if self._bytes + need <= self.config.tsdb_max_bytes:
            return
        for key in sorted(self._series, key=lambda k: self._series[k].seq):
            if key == keep:
                continue
            self._drop_locked(key)
            if self._bytes + need <= self.config.tsdb_max_bytes:
                return
        raise MemoryError(f"metric cache budget {self.config.tsdb_max_bytes} B too small")

    def _drop_locked(self, key: tuple[Any, ...]) -> None:
        series = self._series.pop(key)
        self._bytes -= series.capacity * _POINT_BYTES + _SERIES_OVERHEAD_BYTES

    def query(
        self, kind: str, properties: Mapping[str, str], start: float, end: float
    ) -> QueryResult:
        """Points of one series with ``start <= t <= end`` (seconds, inclusive as upstream)."""
        metric_types.validate(kind, properties)
        lo, hi = int(start * 1000), int(end * 1000)
        with self._lock:
            series = self._series.get(_key(kind, properties))
            if series is None:
                return QueryResult(np.empty(0, np.int64), np.empty(0, np.float64))
            ts, val = series.ordered()
            mask = (ts >= lo) & (ts <= hi)
            return QueryResult(ts[mask].copy(), val[mask].copy())

    def run_gc(self, stop: threading.Event) -> None:
        """``gc`` every ``metric_gc_interval_seconds`` until ``stop`` (upstream
        ``metricCache.Run``)."""
        while not stop.wait(self.config.metric_gc_interval_seconds):
            self.gc(time.time())

    def gc(self, now: float) -> None:
        """Drops points older than ``metric_expire_seconds`` and series left with none."""
        cutoff = int((now - self.config.metric_expire_seconds) * 1000)
        with self._lock:
            for key in list(self._series):
                series = self._series[key]
                if series.last_ms < cutoff:
                    self._drop_locked(key)
                    continue
                ts, val = series.ordered()
                keep = ts >= cutoff
                n = int(np.count_nonzero(keep))
                if n != series.size:
                    ring_ts, ring_val = series.views()
                    ring_ts[:n] = ts[keep]
                    ring_val[:n] = val[keep]
                    series.start, series.size = 0, n

    def series_count(self) -> int:
        with self._lock:
            return len(self._series)

    def allocated_bytes(self) -> int:
        with self._lock:
            return self._bytes

    # -- KV -----------------------------------------------------------------------------------

    def set(self, key: str, value: Any) -> None:
        with self._lock:
            self._kv[key] = value

    def get(self, key: str) -> Any | None:
        with self._lock:
            return self._kv.get(key)
