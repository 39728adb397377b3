from koordlet.bench.__main__ import bench_hour, bench_tick


def test_small_bench_runs_and_counts_series():
    assert bench_tick(n_pods=5, ticks=3) > 0
    rss, series, cache_mib = bench_hour(n_pods=5, seconds=120)
    assert series == 2 + 5 * 2
    assert 0 < cache_mib < rss
