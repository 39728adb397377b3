from koordlet.bench.__main__ import bench_hour, bench_qos, bench_tick
from koordlet.qosmanager.register import STRATEGY_PLUGINS


def test_small_bench_runs_and_counts_series():
    assert bench_tick(n_pods=5, ticks=3) > 0
    rss, series, cache_mib = bench_hour(n_pods=5, seconds=120)
    assert series == 2 + 5 * 2
    assert 0 < cache_mib < rss


def test_small_qos_bench_runs_every_registered_strategy():
    per_strategy, total_ms, rss = bench_qos(n_pods=10, ticks=3)
    assert set(per_strategy) == set(STRATEGY_PLUGINS)
    assert total_ms > 0 and rss > 0
