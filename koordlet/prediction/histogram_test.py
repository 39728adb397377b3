from koordlet.prediction.histogram import DecayingHistogram, HistogramOptions
from koordlet.prediction.peak_predictor import CPU_OPTIONS, MEMORY_OPTIONS

OPTS = HistogramOptions.exponential(1024, 0.025, 1.05, 1e-4)


def test_bucket_layout_matches_upstream_formula() -> None:
    # ceil(log_1.05(1024 × 0.05 / 0.025 + 1)) + 1
    assert CPU_OPTIONS.num_buckets == 158
    assert MEMORY_OPTIONS.num_buckets == 205  # ceil(log_1.05(2^41 × 0.05 / 5Mi + 1)) + 1
    assert OPTS.bucket_start(0) == 0.0
    assert abs(OPTS.bucket_start(1) - 0.025) < 1e-12
    assert abs(OPTS.bucket_start(2) - 0.025 * 2.05) < 1e-12
    assert OPTS.find_bucket(0.01) == 0
    assert OPTS.find_bucket(1e9) == OPTS.num_buckets - 1


def test_percentile_is_start_of_next_bucket() -> None:
    h = DecayingHistogram(OPTS, 12 * 3600)
    assert h.percentile(0.9) == 0.0  # empty
    for v in (1.0, 2.0, 3.0, 4.0):
        h.add_sample(v, 1.0, 1000.0)
    p50 = h.percentile(0.5)
    assert p50 == OPTS.bucket_start(OPTS.find_bucket(2.0) + 1)
    assert 2.0 <= p50 < 2.0 * 1.06
    assert h.percentile(1.0) == OPTS.bucket_start(OPTS.find_bucket(4.0) + 1)


def test_samples_one_half_life_older_weigh_half() -> None:
    half = 3600.0
    h = DecayingHistogram(OPTS, half)
    t0 = 1_700_000_000.0
    # Two old samples at 1 core equal one fresh sample at 8 cores one half-life later:
    h.add_sample(1.0, 1.0, t0)
    h.add_sample(1.0, 1.0, t0)
    h.add_sample(8.0, 1.0, t0 + half)
    assert h.percentile(0.49) < 1.1
    assert h.percentile(0.51) > 8.0
    # Two half-lives later a fresh sample outweighs both old ones together.
    h.add_sample(8.0, 1.0, t0 + 3 * half)
    assert h.percentile(0.5) > 8.0


def test_reference_shift_keeps_relative_weights() -> None:
    h = DecayingHistogram(OPTS, 60.0)
    h.add_sample(1.0, 1.0, 0.0)
    h.add_sample(2.0, 1.0, 0.0)
    ref = h.reference
    # 200 half-lives later: the reference moves instead of 2^200 overflowing the weights.
    h.add_sample(2.0, 1.0, 200 * 60.0)
    assert h.reference > ref
    assert h.total_weight < 10.0
    assert h.percentile(0.5) > 2.0
