"""Load-aware scheduling keys: per-node usage thresholds and per-pod estimation overrides.

Corresponds to upstream `apis/extension/load_aware.go`.
``parse_*`` functions raise MalformedValueError; ``get_*`` functions fall back as upstream does
(invalid estimation overrides are ignored).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import TypeAdapter

from api.errors import MalformedValueError
from api.extension.codec import decode_model, decode_value, parse_int_value
from api.extension.constants import SCHEDULING_DOMAIN_PREFIX
from api.extension.payload import GoDuration, GoPayload, Int64Map, dump_json

ANNOTATION_CUSTOM_USAGE_THRESHOLDS = SCHEDULING_DOMAIN_PREFIX + "/usage-thresholds"
ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS = (
    SCHEDULING_DOMAIN_PREFIX + "/load-estimated-scaling-factors")
ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED = (
    SCHEDULING_DOMAIN_PREFIX + "/load-estimated-seconds-after-pod-scheduled")
ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED = (
    SCHEDULING_DOMAIN_PREFIX + "/load-estimated-seconds-after-initialized")


class AggregationType(StrEnum):
    AVG = "avg"
    P50 = "p50"
    P90 = "p90"
    P95 = "p95"
    P99 = "p99"


class CustomAggregatedUsage(GoPayload):
    """Percentile-based limits: resource → percent, the percentile and its window."""

    usage_thresholds: Int64Map | None = None
    usage_aggregation_type: str = ""
    usage_aggregated_duration: GoDuration | None = None


class CustomUsageThresholds(GoPayload):
    """A node's utilisation limits (resource → percent), overriding the plugin arguments."""

    usage_thresholds: Int64Map | None = None
    prod_usage_thresholds: Int64Map | None = None
    aggregated_usage: CustomAggregatedUsage | None = None


def parse_custom_usage_thresholds(
        annotations: Mapping[str, str] | None) -> CustomUsageThresholds:
    """The node's thresholds; missing → empty thresholds."""
    raw = (annotations or {}).get(ANNOTATION_CUSTOM_USAGE_THRESHOLDS)
    if raw is None:
        return CustomUsageThresholds()
    return decode_model(ANNOTATION_CUSTOM_USAGE_THRESHOLDS, raw, CustomUsageThresholds)


def format_custom_usage_thresholds(thresholds: CustomUsageThresholds) -> str:
    return thresholds.to_go_json()


_FACTORS = TypeAdapter(Int64Map)


def parse_estimated_scaling_factors(
        annotations: Mapping[str, str] | None) -> dict[str, int] | None:
    """Resource → percent estimation factors; None when missing or empty."""
    raw = (annotations or {}).get(ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS)
    if not raw:
        return None
    return decode_value(ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS, raw, _FACTORS)


def get_estimated_scaling_factors(annotations: Mapping[str, str] | None) -> dict[str, int] | None:
    """The factors, None when missing or invalid (ignored)."""
    try:
        return parse_estimated_scaling_factors(annotations)
    except MalformedValueError:
        return None


def format_estimated_scaling_factors(factors: Mapping[str, int]) -> str:
    return dump_json(_FACTORS, dict(factors))


def _parse_seconds(annotations: Mapping[str, str] | None, key: str) -> int:
    raw = (annotations or {}).get(key)
    return parse_int_value(key, raw) if raw else -1


def parse_estimated_seconds_after_pod_scheduled(annotations: Mapping[str, str] | None) -> int:
    """int64 seconds; -1 (use the default) when missing or empty."""
    return _parse_seconds(annotations, ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED)


def parse_estimated_seconds_after_initialized(annotations: Mapping[str, str] | None) -> int:
    """int64 seconds; -1 (use the default) when missing or empty."""
    return _parse_seconds(annotations, ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED)


def get_estimated_seconds_after_pod_scheduled(annotations: Mapping[str, str] | None) -> int:
    """As the parser, with an invalid value read as -1."""
    try:
        return parse_estimated_seconds_after_pod_scheduled(annotations)
    except MalformedValueError:
        return -1


def get_estimated_seconds_after_initialized(annotations: Mapping[str, str] | None) -> int:
    """As the parser, with an invalid value read as -1."""
    try:
        return parse_estimated_seconds_after_initialized(annotations)
    except MalformedValueError:
        return -1


__all__ = [
    "ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS",
    "ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_INITIALIZED",
    "ANNOTATION_CUSTOM_ESTIMATED_SECONDS_AFTER_POD_SCHEDULED",
    "ANNOTATION_CUSTOM_USAGE_THRESHOLDS", "AggregationType", "CustomAggregatedUsage",
    "CustomUsageThresholds", "format_custom_usage_thresholds", "format_estimated_scaling_factors",
    "get_estimated_scaling_factors", "get_estimated_seconds_after_initialized",
    "get_estimated_seconds_after_pod_scheduled", "parse_custom_usage_thresholds",
    "parse_estimated_scaling_factors", "parse_estimated_seconds_after_initialized",
    "parse_estimated_seconds_after_pod_scheduled",
]
