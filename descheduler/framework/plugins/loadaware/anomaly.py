"""Per-node anomaly detection over consecutive descheduling passes.

Corresponds to koordinator ``pkg/descheduler/utils/anomaly`` (``BasicDetector`` kept in an
expiring cache, as LowNodeLoad uses it): a node becomes abnormal only after more than
``consecutiveAbnormalities`` consecutive passes over its thresholds, returns to normal after
more than ``consecutiveNormalities`` normal passes or ``timeout`` after turning abnormal, and
is forgotten ``detectorCacheTimeout`` after it was last marked abnormal (normal marks and
resets neither create nor renew a detector: upstream sets the cache entry only there).
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

    def _get(self, node: str) -> _Detector | None:
        """The node's detector unless missing or expired from the cache."""
        now = self.clock.now()
        detector = self._detectors.get(node)
        if detector is None or now - detector.last_set >= self.cache_timeout:
            self._detectors.pop(node, None)
            return None
        if detector.state == ANOMALY and self.condition.timeout is not None and \
                now - detector.anomaly_since >= self.condition.timeout:
            detector.state, detector.abnormalities, detector.normalities = OK, 0, 0
        return detector

    def state(self, node: str) -> str:
        detector = self._get(node)
        return OK if detector is None else detector.state

    def mark_abnormal(self, node: str) -> str:
        """Records a pass with ``node`` over its thresholds (creating its detector and renewing
        its cache entry); returns its state after it."""
        detector = self._get(node) or _Detector()
        detector.last_set = self.clock.now()
        self._detectors[node] = detector
        detector.abnormalities += 1
        detector.normalities = 0
        if detector.state == OK and \
                detector.abnormalities > self.condition.consecutive_abnormalities:
            detector.state, detector.anomaly_since = ANOMALY, self.clock.now()
        return detector.state

    def mark_normal(self, node: str) -> None:
        """Records a normal pass for a node that has a detector."""
        detector = self._get(node)
        if detector is None:
            return
        detector.normalities += 1
        detector.abnormalities = 0
        if detector.state == ANOMALY and \
                detector.normalities > self.condition.consecutive_normalities:
            detector.state, detector.normalities = OK, 0

    def reset(self, node: str) -> None:
        """Back to OK with cleared counters, for a node that has a detector."""
        detector = self._get(node)
        if detector is not None:
            detector.state, detector.abnormalities, detector.normalities = OK, 0, 0
