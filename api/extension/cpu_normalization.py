"""CPU normalization: the node's ratio annotation, its enable label and the CPU basic info.

Corresponds to upstream `apis/extension/cpu_normalization.go`.
The ratio is written by the slo-controller with exactly two decimals (``"1.20"``); readers parse
a float and reject values that are not positive.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pydantic import Field

from api.errors import MalformedValueError
from api.extension.amplification import format_ratio
from api.extension.codec import decode_model, parse_bool_value, parse_float_value
from api.extension.constants import NODE_DOMAIN_PREFIX
from api.extension.payload import GoBool, GoPayload

ANNOTATION_CPU_NORMALIZATION_RATIO = NODE_DOMAIN_PREFIX + "/cpu-normalization-ratio"
LABEL_CPU_NORMALIZATION_ENABLED = NODE_DOMAIN_PREFIX + "/cpu-normalization-enabled"
ANNOTATION_CPU_BASIC_INFO = NODE_DOMAIN_PREFIX + "/cpu-basic-info"

# Two ratios closer than this are the same ratio.
NORMALIZATION_RATIO_DIFF_EPSILON = 0.01


def parse_cpu_normalization_ratio(annotations: Mapping[str, str] | None) -> float:
    """The node's ratio; -1 when the annotation is missing. Not a number, or not a finite
    positive one, raises MalformedValueError."""
    raw = (annotations or {}).get(ANNOTATION_CPU_NORMALIZATION_RATIO)
    if raw is None:
        return -1.0
    ratio = parse_float_value(ANNOTATION_CPU_NORMALIZATION_RATIO, raw)
    if not math.isfinite(ratio) or ratio <= 0:
        raise MalformedValueError(ANNOTATION_CPU_NORMALIZATION_RATIO,
                                  f"ratio must be a finite number > 0, got {raw!r}")
    return ratio


def format_cpu_normalization_ratio(ratio: float) -> str:
    """The annotation value with exactly two decimals (``1.2`` → ``"1.20"``)."""
    return format_ratio(ratio)


def is_cpu_normalization_ratio_different(old: float, new: float) -> bool:
    """True when the ratios differ by more than 0.01."""
    return old > new + NORMALIZATION_RATIO_DIFF_EPSILON or old < new - (
        NORMALIZATION_RATIO_DIFF_EPSILON)


def parse_cpu_normalization_enabled(labels: Mapping[str, str] | None) -> bool | None:
    """The label as a Go bool (``true``, ``1``, ``t``, ``FALSE``...); None when absent."""
    raw = (labels or {}).get(LABEL_CPU_NORMALIZATION_ENABLED)
    if raw is None:
        return None
    return parse_bool_value(LABEL_CPU_NORMALIZATION_ENABLED, raw)


class CPUBasicInfo(GoPayload):
    """The node's CPU model and features, as koordlet reports them."""

    cpu_model: str = Field("", alias="cpuModel")
    hyper_thread_enabled: GoBool = False
    turbo_enabled: GoBool = False
    cat_l3_cbm_mask: str = Field("", alias="catL3CbmMask")
    vendor_id: str = Field("", alias="vendorID")

    def key(self) -> str:
        """Upstream ``Key()``: model, hyper-threading and turbo (``"Xeon_true_false"``)."""
        return f"{self.cpu_model}_{str(self.hyper_thread_enabled).lower()}_" \
               f"{str(self.turbo_enabled).lower()}"


def parse_cpu_basic_info(annotations: Mapping[str, str] | None) -> CPUBasicInfo | None:
    """The node's CPU basic info; None when the annotation is missing."""
    raw = (annotations or {}).get(ANNOTATION_CPU_BASIC_INFO)
    if raw is None:
        return None
    return decode_model(ANNOTATION_CPU_BASIC_INFO, raw, CPUBasicInfo)


def format_cpu_basic_info(info: CPUBasicInfo) -> str:
    return info.to_go_json()


__all__ = [
    "ANNOTATION_CPU_BASIC_INFO", "ANNOTATION_CPU_NORMALIZATION_RATIO",
    "LABEL_CPU_NORMALIZATION_ENABLED", "NORMALIZATION_RATIO_DIFF_EPSILON", "CPUBasicInfo",
    "format_cpu_basic_info", "format_cpu_normalization_ratio",
    "is_cpu_normalization_ratio_different", "parse_cpu_basic_info",
    "parse_cpu_normalization_enabled", "parse_cpu_normalization_ratio",
]
