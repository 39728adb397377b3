"""The per-node anomaly detector: N+1 consecutive abnormal passes, recovery by normal passes
or timeout, reset, and the cache forgetting idle nodes."""

from __future__ import annotations

from descheduler.apis.config.args import LoadAnomalyCondition
from descheduler.framework.plugins.loadaware.anomaly import ANOMALY, OK, AnomalyDetectors
from pkg.util.clock import FakeClock


def detectors(abnormalities: int = 5, normalities: int = 3, timeout: float = 60.0,
              cache_timeout: float = 300.0) -> tuple[AnomalyDetectors, FakeClock]:
    clock = FakeClock()
    condition = LoadAnomalyCondition(timeout=timeout, consecutive_abnormalities=abnormalities,
                                     consecutive_normalities=normalities)
    return AnomalyDetectors(condition, cache_timeout, clock), clock


def test_abnormal_after_more_than_n_consecutive_marks() -> None:
    d, _ = detectors()
    assert [d.mark("n", normal=False) for _ in range(6)] == [OK] * 5 + [ANOMALY]


def test_a_normal_mark_breaks_the_streak() -> None:
    d, _ = detectors(abnormalities=2)
    d.mark("n", normal=False)
    d.mark("n", normal=False)
    d.mark("n", normal=True)
    assert [d.mark("n", normal=False) for _ in range(3)] == [OK, OK, ANOMALY]


def test_recovers_after_more_than_m_normal_marks() -> None:
    d, _ = detectors(abnormalities=1, normalities=2)
    d.mark("n", normal=False)
    assert d.mark("n", normal=False) == ANOMALY
    assert [d.mark("n", normal=True) for _ in range(3)] == [ANOMALY, ANOMALY, OK]


def test_anomaly_expires_after_its_timeout_and_abnormal_marks_do_not_extend_it() -> None:
    d, clock = detectors(abnormalities=1, timeout=60.0)
    d.mark("n", normal=False)
    assert d.mark("n", normal=False) == ANOMALY
    clock.step(30)
    assert d.mark("n", normal=False) == ANOMALY
    clock.step(30)
    # Expired to OK with counters cleared: this mark starts a new streak.
    assert d.mark("n", normal=False) == OK


def test_reset_and_cache_timeout_forget_the_streak() -> None:
    d, clock = detectors(abnormalities=1, cache_timeout=100.0)
    d.mark("n", normal=False)
    d.reset("n")
    assert d.mark("n", normal=False) == OK
    clock.step(100)
    assert d.mark("n", normal=False) == OK
    assert d.mark("n", normal=False) == ANOMALY
