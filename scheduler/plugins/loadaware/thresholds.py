"""Which usage thresholds apply to a pod on a node.

Corresponds to koordinator ``pkg/scheduler/plugins/loadaware/helper.go``
(``usageThresholdsFilterProfile``, ``NewUsageThresholdsFilterProfile``,
``generateUsageThresholdsFilterProfile``). The plugin args give the profile; a node's
``scheduling.koordinator.sh/usage-thresholds`` annotation replaces whole groups of it (never
single resources), and a malformed one is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from api.errors import MalformedValueError
from api.extension.load_aware import (
    ANNOTATION_CUSTOM_USAGE_THRESHOLDS,
    CustomUsageThresholds,
    parse_custom_usage_thresholds,
)
from api.meta import parse_duration
from scheduler.plugins.loadaware.nodeload import (
    NODE_USAGE,
    PROD_USAGE,
    UsageSource,
    aggregated_usage,
)
from scheduler.plugins.loadaware.vector import ResourceVectorizer, Vector

if TYPE_CHECKING:
    from scheduler.apis.config import LoadAwareSchedulingArgs


@dataclass(frozen=True, slots=True)
class AggregatedThresholds:
    thresholds: Vector
    source: UsageSource  # the percentile and window the thresholds judge


@dataclass(frozen=True, slots=True)
class FilterProfile:
    usage: Vector | None = None
    prod: Vector | None = None
    aggregated: AggregatedThresholds | None = None

    def pick(self, prod_pod: bool) -> tuple[Vector | None, UsageSource, bool]:
        """(thresholds, usage they judge, aggregated?) for a pod; thresholds that are None or
        all zero disable the filter."""
        if prod_pod and self.prod is not None and self.prod.any():
            return self.prod, PROD_USAGE, False
        if self.aggregated is not None:
            return self.aggregated.thresholds, self.aggregated.source, True
        return self.usage, NODE_USAGE, False


def args_profile(args: LoadAwareSchedulingArgs, vectorizer: ResourceVectorizer) -> FilterProfile:
    agg = args.aggregated
    aggregated = None
    if agg is not None and agg.usage_thresholds and agg.usage_aggregation_type:
        aggregated = AggregatedThresholds(
            vectorizer.to_factor_vec(agg.usage_thresholds),
            aggregated_usage(agg.usage_aggregation_type, agg.usage_aggregated_duration))
    return FilterProfile(
        usage=vectorizer.to_factor_vec(args.usage_thresholds) if args.usage_thresholds else None,
        prod=(vectorizer.to_factor_vec(args.prod_usage_thresholds)
              if args.prod_usage_thresholds else None),
        aggregated=aggregated)


def node_profile(base: FilterProfile, vectorizer: ResourceVectorizer,
                 annotations: dict[str, str] | None) -> FilterProfile:
    """``base`` with the groups the node's annotation sets replaced."""
    raw = (annotations or {}).get(ANNOTATION_CUSTOM_USAGE_THRESHOLDS)
    if raw is None:
        return base
    custom = _parse(raw)
    if custom is None:
        return base
    agg = custom.aggregated_usage
    if agg is not None and not (agg.usage_thresholds and agg.usage_aggregation_type):
        agg = None
    if not custom.usage_thresholds and not custom.prod_usage_thresholds and agg is None:
        return base
    aggregated = base.aggregated
    if agg is not None:
        seconds = parse_duration(agg.usage_aggregated_duration) \
            if agg.usage_aggregated_duration else 0.0
        aggregated = AggregatedThresholds(
            vectorizer.to_factor_vec(agg.usage_thresholds),
            aggregated_usage(agg.usage_aggregation_type, seconds))
    return FilterProfile(
        usage=(vectorizer.to_factor_vec(custom.usage_thresholds)
               if custom.usage_thresholds else base.usage),
        prod=(vectorizer.to_factor_vec(custom.prod_usage_thresholds)
              if custom.prod_usage_thresholds else base.prod),
        aggregated=aggregated)


@lru_cache(maxsize=256)
def _parse(raw: str) -> CustomUsageThresholds | None:
    # Nodes tend to share a few annotation values; parse each once.
    try:
        return parse_custom_usage_thresholds({ANNOTATION_CUSTOM_USAGE_THRESHOLDS: raw})
    except MalformedValueError:
        return None
