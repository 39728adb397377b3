"""Which resource names the scheduler tracks as scalar resources.

Corresponds to kubernetes ``pkg/scheduler/util`` ``IsScalarResourceName`` (with
``pkg/apis/core/v1/helper``'s name predicates). Besides cpu, memory, ephemeral-storage and
pods, a node's and a pod's resources count only when they are scalar: extended resources
(``example.com/gpu``), hugepages, ``kubernetes.io/``-prefixed ones (Koordinator's
``kubernetes.io/batch-cpu``) and attachable volumes. Others are ignored by Fit and scoring.
"""

from __future__ import annotations

from functools import lru_cache

from scheduler.apis.config.names import NATIVE_RESOURCE_PREFIX, is_extended_resource_name

HUGEPAGES_PREFIX = "hugepages-"
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"


@lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    return (is_extended_resource_name(name) or name.startswith(HUGEPAGES_PREFIX)
            or NATIVE_RESOURCE_PREFIX in name or name.startswith(ATTACHABLE_VOLUMES_PREFIX))
