"""Decaying exponential histograms (upstream ``pkg/util/histogram``, the VPA recommender's
``histogram.go``, ``histogram_options.go`` and ``decaying_histogram.go``).

``HistogramOptions.exponential(max_value, first_bucket_size, ratio, epsilon)`` lays out
buckets whose sizes grow by ``ratio``; ``DecayingHistogram(options, half_life)`` weighs a
sample at time ``t`` by ``2^((t − reference)/half_life)``, so old samples count half as much
every half-life. ``percentile(p)`` returns the start of the bucket *after* the one where the
cumulative weight reaches ``p × total`` (an upper bound, as upstream), 0 when empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

# Upstream maxDecayExponent: past 100 half-lives the reference moves so 2^x stays finite.
MAX_DECAY_EXPONENT = 100


@dataclass(slots=True, frozen=True)
class HistogramOptions:
    first_bucket_size: float
    ratio: float
    num_buckets: int
    epsilon: float

    @classmethod
    def exponential(cls, max_value: float, first_bucket_size: float, ratio: float,
                    epsilon: float) -> HistogramOptions:
        if max_value <= 0 or first_bucket_size <= 0 or ratio <= 1 or epsilon <= 0:
            raise ValueError("invalid exponential histogram options")
        n = math.ceil(math.log(max_value * (ratio - 1) / first_bucket_size + 1, ratio)) + 1
        return cls(first_bucket_size, ratio, n, epsilon)

    def find_bucket(self, value: float) -> int:
        if value < self.first_bucket_size:
            return 0
        bucket = int(math.log(value * (self.ratio - 1) / self.first_bucket_size + 1, self.ratio))
        return min(bucket, self.num_buckets - 1)

    def bucket_start(self, bucket: int) -> float:
        if bucket == 0:
            return 0.0
        return self.first_bucket_size * (self.ratio**bucket - 1) / (self.ratio - 1)


@dataclass(slots=True)
class DecayingHistogram:
    options: HistogramOptions
    half_life: float  # seconds
    reference: float = 0.0  # seconds since the epoch
    weights: np.ndarray = field(init=False)
    total_weight: float = 0.0
    min_bucket: int = field(init=False)
    max_bucket: int = 0

    def __post_init__(self) -> None:
        self.weights = np.zeros(self.options.num_buckets, np.float64)
        self.min_bucket = self.options.num_buckets - 1

    def is_empty(self) -> bool:
        return bool(self.weights[self.min_bucket] < self.options.epsilon)

    def add_sample(self, value: float, weight: float, t: float) -> None:
        if weight < 0:
            raise ValueError("sample weight must be non-negative")
        weight *= self._decay_factor(t)
        bucket = self.options.find_bucket(value)
        self.weights[bucket] += weight
        self.total_weight += weight
        if self.weights[bucket] >= self.options.epsilon:
            self.min_bucket = min(self.min_bucket, bucket)
            self.max_bucket = max(self.max_bucket, bucket)

    def _decay_factor(self, t: float) -> float:
        if t > self.reference + self.half_life * MAX_DECAY_EXPONENT:
            self._shift_reference(t)
        return 2.0 ** ((t - self.reference) / self.half_life)

    def _shift_reference(self, t: float) -> None:
        # The reference stays a whole number of half-lives (Go's time.Round).
        new_ref = math.floor(t / self.half_life + 0.5) * self.half_life
        exponent = round((self.reference - new_ref) / self.half_life)
        self._scale(2.0**exponent)
        self.reference = new_ref

    def _scale(self, factor: float) -> None:
        self.weights *= factor
        self.total_weight *= factor
        live = np.nonzero(self.weights >= self.options.epsilon)[0]
        if len(live):
            self.min_bucket, self.max_bucket = int(live[0]), int(live[-1])
        else:
            self.min_bucket, self.max_bucket = self.options.num_buckets - 1, 0

    def percentile(self, p: float) -> float:
        if self.is_empty():
            return 0.0
        threshold = p * self.total_weight
        partial = 0.0
        bucket = self.min_bucket
        while bucket < self.max_bucket:
            partial += self.weights[bucket]
            if partial >= threshold:
                break
            bucket += 1
        if bucket < self.options.num_buckets - 1:
            return self.options.bucket_start(bucket + 1)
        return self.options.bucket_start(bucket)
