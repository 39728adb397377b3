"""The ElasticQuota quota tree (koordinator ``pkg/scheduler/plugins/elasticquota/core``)."""

from scheduler.plugins.elasticquota.core.group_quota_manager import GroupQuotaManager
from scheduler.plugins.elasticquota.core.quota_info import PodEntry, QuotaInfo, to_resource_list
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import (
    ResourceInts,
    RuntimeQuotaCalculator,
)
from scheduler.plugins.elasticquota.core.scale_min_quota import ScaleMinQuotaManager

__all__ = [
    "GroupQuotaManager", "PodEntry", "QuotaInfo", "ResourceInts", "RuntimeQuotaCalculator",
    "ScaleMinQuotaManager", "to_resource_list",
]
