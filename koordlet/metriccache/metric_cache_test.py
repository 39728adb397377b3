import numpy as np
import pytest

from koordlet.metriccache import aggregate
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample

T0 = 1_700_000_000.0


def _fill(cache: MetricCache, kind: str, props: dict[str, str], values: list[float]) -> None:
    cache.append(MetricSample(kind, props, T0 + i, v) for i, v in enumerate(values))


def test_queries_over_known_series_are_exact():
    cache = MetricCache()
    values = [float(v) for v in range(1, 101)]  # 1..100
    _fill(cache, mt.NODE_CPU_USAGE, {}, values[::-1])  # out of value order on purpose
    res = cache.query(mt.NODE_CPU_USAGE, {}, T0, T0 + 99)
    assert res.count() == 100
    assert res.value(aggregate.AVG) == pytest.approx(50.5)
    # upstream: sorted[int(float32(n)*float32(p)) - 1]
    assert res.value(aggregate.P50) == 50.0
    assert res.value(aggregate.P90) == 90.0
    assert res.value(aggregate.P95) == 95.0
    assert res.value(aggregate.P99) == 99.0
    assert res.value(aggregate.LAST) == 1.0  # newest timestamp holds the smallest value
    assert res.time_range_seconds() == 99.0


def test_percentile_uses_float32_index_without_interpolation():
    # n=10, p=0.95: int(9.5) - 1 = 8 -> the 9th smallest value, no interpolation
    assert aggregate.percentile(np.arange(10, dtype=float), 0.95) == 8.0
    # n=1: index clamps to 0
    assert aggregate.percentile(np.array([7.0]), 0.5) == 7.0


def test_window_is_inclusive_and_selects_by_properties():
    cache = MetricCache()
    _fill(cache, mt.POD_CPU_USAGE, {mt.POD_UID: "a"}, [1, 2, 3, 4, 5])
    _fill(cache, mt.POD_CPU_USAGE, {mt.POD_UID: "b"}, [10, 20, 30, 40, 50])
    res = cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "b"}, T0 + 1, T0 + 3)
    assert list(res.values) == [20, 30, 40]
    assert cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "zz"}, T0, T0 + 9).count() == 0
    with pytest.raises(aggregate.EmptyResultError):
        cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "zz"}, T0, T0 + 9).value(aggregate.AVG)


def test_property_schema_is_enforced():
    cache = MetricCache()
    with pytest.raises(ValueError):
        cache.append([MetricSample(mt.POD_CPU_USAGE, {}, T0, 1.0)])
    with pytest.raises(ValueError):
        cache.append([MetricSample(mt.NODE_CPU_USAGE, {mt.POD_UID: "x"}, T0, 1.0)])
    assert cache.series_count() == 0


def test_ring_keeps_only_retention_window():
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=100))
    _fill(cache, mt.NODE_CPU_USAGE, {}, [float(i) for i in range(1000)])
    res = cache.query(mt.NODE_CPU_USAGE, {}, T0, T0 + 1000)
    assert res.count() == 101
    assert res.values[0] == 899.0 and res.value(aggregate.LAST) == 999.0


def test_gc_drops_expired_points_and_dead_series():
    cache = MetricCache(MetricCacheConfig(metric_expire_seconds=60))
    _fill(cache, mt.POD_CPU_USAGE, {mt.POD_UID: "gone"}, [1.0] * 10)  # T0..T0+9
    _fill(cache, mt.POD_CPU_USAGE, {mt.POD_UID: "live"}, [2.0] * 50)  # T0..T0+49
    cache.gc(now=T0 + 100)  # cutoff T0+40
    assert cache.series_count() == 1
    live = cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "live"}, T0, T0 + 100)
    assert live.count() == 10 and live.timestamps.min() == (T0 + 40) * 1000


def test_memory_budget_evicts_least_recently_appended_series():
    budget = 100 * (64 * 16 + 512)
    cache = MetricCache(MetricCacheConfig(tsdb_max_bytes=budget))
    for i in range(300):
        cache.append([MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: str(i)}, T0 + i, 1.0)])
        assert cache.allocated_bytes() <= budget
    assert cache.series_count() == 100
    # the newest pods survive, the oldest were dropped
    assert cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "299"}, T0, T0 + 999).count() == 1
    assert cache.query(mt.POD_CPU_USAGE, {mt.POD_UID: "0"}, T0, T0 + 999).count() == 0


def test_too_old_out_of_order_append_is_dropped():
    cache = MetricCache()
    cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, T0 + 120, 1.0)])
    cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, T0 + 90, 2.0)])  # within 1 min: kept
    cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, T0, 3.0)])  # 2 min late: dropped
    res = cache.query(mt.NODE_CPU_USAGE, {}, T0, T0 + 200)
    assert sorted(res.values) == [1.0, 2.0]
    assert res.value(aggregate.LAST) == 1.0


def test_kv_store():
    cache = MetricCache()
    assert cache.get(mt.NODE_CPU_INFO_KEY) is None
    cache.set(mt.NODE_CPU_INFO_KEY, [1, 2])
    assert cache.get(mt.NODE_CPU_INFO_KEY) == [1, 2]
