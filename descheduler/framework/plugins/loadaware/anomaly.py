"""Per-node anomaly detection over consecutive descheduling passes.

Corresponds to koordinator ``pkg/descheduler/utils/anomaly`` (``BasicDetector`` kept in an
expiring cache, as LowNodeLoad uses it): a node becomes abnormal only after more than
``consecutiveAbnormalities`` consecutive passes over its thresholds, returns to normal after
more than ``consecutiveNormalities`` normal passes or ``timeout`` after turning abnormal, and
is forgotten ``detectorCacheTimeout`` after it was last marked.
"""

from __future__ import annotations

from dataclasses import dataclass

from descheduler.apis.config.args import LoadAnomalyCondition
from pkg.util.clock import Clock

OK, ANOMALY = "OK", "Anomaly"


@dataclass(slots=True)
class _Detector:
    state: str = OK
    abnormalities: int = 0
    normalities: int = 0
    anomaly_since: float = 0.0
    last_set: float = 0.0


class AnomalyDetectors:
    """One detector per node name."""

    def __init__(self, condition: LoadAnomalyCondition, cache_timeout: float,
                 clock: Clock) -> None:
        self.condition = condition
        self.cache_timeout = cache_timeout
        self.clock = clock
        self._detectors: dict[str, _Detector] = {}

    def _get(self, node: str) -> _Detector:
        now = self.clock.now()
        detector = self._detectors.get(node)
        if detector is None or now - detector.last_set >= self.cache_timeout:
            detector = self._detectors[node] = _Detector()
        detector.last_set = now
        if detector.state == ANOMALY and self.condition.timeout is not None and \
                now - detector.anomaly_since >= self.condition.timeout:
            detector.state, detector.abnormalities, detector.normalities = OK, 0, 0
        return detector

    def mark(self, node: str, normal: bool) -> str:
        """Records one pass's observation of ``node``; returns its state after it."""
        detector = self._get(node)
        if normal:
            detector.normalities += 1
            detector.abnormalities = 0
            if detector.state == ANOMALY and \
                    detector.normalities > self.condition.consecutive_normalities:
                detector.state, detector.normalities = OK, 0
        else:
            detector.abnormalities += 1
            detector.normalities = 0
            if detector.state == OK and \
                    detector.abnormalities > self.condition.consecutive_abnormalities:
                detector.state, detector.anomaly_since = ANOMALY, self.clock.now()
        return detector.state

    def reset(self, node: str) -> None:
        if node in self._detectors:
            self._detectors[node] = _Detector(last_set=self.clock.now())
