"""How much a pod will use and how much a node can give: the default estimator.

Corresponds to koordinator ``pkg/scheduler/plugins/loadaware/estimator`` (``DefaultEstimator``:
``EstimatePod``, ``EstimateNode``). A pod's estimate is max(request, limit) of the resource its
priority class really consumes, scaled by the configured factor and capped at the limit; empty
cpu/memory count as 250m / 200 MiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from api.errors import MalformedValueError
from api.extension.amplification import parse_raw_allocatable
from api.extension.load_aware import get_estimated_scaling_factors
from api.extension.priority import PriorityClass, get_pod_priority_class_with_default
from api.extension.resource import (
    BATCH_CPU,
    BATCH_MEMORY,
    translate_resource_name_by_priority_class,
)
from pkg.util.podresources import CPU, MEMORY, pod_limits, pod_requests, resource_list
from scheduler.plugins.loadaware.vector import round_half_away

if TYPE_CHECKING:
    from scheduler.apis.config import LoadAwareSchedulingArgs

DEFAULT_ESTIMATOR_NAME = "defaultEstimator"
DEFAULT_MILLI_CPU_REQUEST = 250  # 0.25 core
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

# What a resource without request or limit is estimated at (anything else: 0).
_DEFAULT_USAGE = {CPU: DEFAULT_MILLI_CPU_REQUEST, BATCH_CPU: DEFAULT_MILLI_CPU_REQUEST,
                  MEMORY: DEFAULT_MEMORY_REQUEST, BATCH_MEMORY: DEFAULT_MEMORY_REQUEST}


class DefaultEstimator:
    name = DEFAULT_ESTIMATOR_NAME

    def __init__(self, scaling_factors: Mapping[str, int], allow_customize: bool) -> None:
        self.scaling_factors = dict(scaling_factors)
        self.allow_customize = allow_customize

    def estimate_pod(self, pod: Mapping[str, Any], *,
                     priority_class: PriorityClass | None = None,
                     requests: Mapping[str, int] | None = None) -> dict[str, int]:
        """Factor key → estimated usage. Raises ValueError for a malformed pod quantity.

        ``priority_class`` and ``requests``, when the caller already has them (the
        scheduler's PodInfo), spare parsing the pod's quantities again."""
        factors = self.scaling_factors
        if self.allow_customize:
            custom = get_estimated_scaling_factors(
                (pod.get("metadata") or {}).get("annotations"))
            if custom:
                factors = {**factors, **custom}
        if requests is None:
            requests = pod_requests(pod)
        limits = pod_limits(pod)
        if priority_class is None:
            priority_class = get_pod_priority_class_with_default(pod)
        return {name: _estimate(requests, limits,
                                translate_resource_name_by_priority_class(priority_class, name),
                                factor)
                for name, factor in factors.items()}

    def estimate_node(self, node: Mapping[str, Any]) -> dict[str, int]:
        """The node's allocatable, overridden by its raw (unamplified) allocatable if any."""
        allocatable = resource_list((node.get("status") or {}).get("allocatable"))
        try:
            raw = parse_raw_allocatable((node.get("metadata") or {}).get("annotations"))
        except MalformedValueError:
            return allocatable
        if raw:
            allocatable.update(resource_list(raw))
        return allocatable


def _estimate(requests: Mapping[str, int], limits: Mapping[str, int], resource: str,
              factor: int) -> int:
    # Quantities are already millicores for cpu and units otherwise (batch-cpu is milli units).
    limit = limits.get(resource, 0)
    quantity = max(limit, requests.get(resource, 0))
    if quantity == 0:
        return _DEFAULT_USAGE.get(resource, 0)
    estimated = round_half_away(float(quantity) * float(factor) / 100)
    return limit if 0 < limit < estimated else estimated


def priority_class_of(pod: Mapping[str, Any]) -> PriorityClass | None:
    """The pod's Koordinator priority class (with defaults); None when a malformed quantity
    leaves it without QoS, so without class."""
    try:
        return get_pod_priority_class_with_default(pod)
    except ValueError:
        return None


def is_prod_pod(pod: Mapping[str, Any]) -> bool:
    """The pod's Koordinator priority class (with defaults) is koord-prod."""
    return priority_class_of(pod) == PriorityClass.PROD


def new_estimator(args: LoadAwareSchedulingArgs) -> DefaultEstimator:
    """The estimator ``args.estimator`` names; as upstream, an unknown name gets the default
    (the only one there is)."""
    return DefaultEstimator(args.estimated_scaling_factors, args.allow_customize_estimation)
