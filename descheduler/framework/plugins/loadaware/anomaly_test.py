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
    assert [d.mark_abnormal("n") for _ in range(6)] == [OK] * 5 + [ANOMALY]


def test_a_normal_mark_breaks_the_streak() -> None:
    d, _ = detectors(abnormalities=2)
    d.mark_abnormal("n")
    d.mark_abnormal("n")
    d.mark_normal("n")
    assert [d.mark_abnormal("n") for _ in range(3)] == [OK, OK, ANOMALY]


def test_recovers_after_more_than_m_normal_marks() -> None:
    d, _ = detectors(abnormalities=1, normalities=2)
    d.mark_abnormal("n")
    assert d.mark_abnormal("n") == ANOMALY
    states = []
    for _ in range(3):
        d.mark_normal("n")
        states.append(d.state("n"))
    assert states == [ANOMALY, ANOMALY, OK]


def test_anomaly_expires_after_its_timeout_and_abnormal_marks_do_not_extend_it() -> None:
    d, clock = detectors(abnormalities=1, timeout=60.0)
    d.mark_abnormal("n")
    assert d.mark_abnormal("n") == ANOMALY
    clock.step(30)
    assert d.mark_abnormal("n") == ANOMALY
    clock.step(30)
    # Expired to OK with counters cleared: this mark starts a new streak.
    assert d.mark_abnormal("n") == OK


def test_normal_marks_and_resets_do_not_create_detectors() -> None:
    d, _ = detectors(abnormalities=1)
    d.mark_normal("n")
    d.reset("n")
    d.mark_abnormal("n")
    assert d.mark_abnormal("n") == ANOMALY


def test_reset_and_cache_timeout_forget_the_streak() -> None:
    d, clock = detectors(abnormalities=1, cache_timeout=100.0)
    d.mark_abnormal("n")
    d.reset("n")
    assert d.mark_abnormal("n") == OK
    clock.step(100)
    assert d.mark_abnormal("n") == OK
    assert d.mark_abnormal("n") == ANOMALY
