"""koord-scheduler's gates.

Corresponds to upstream ``pkg/features/scheduler_features.go``, with its names and defaults.
Upstream registers them in the same process-wide gate as ``features.go``. Where a gate's stage
was not known when it was ported, it is taken as Beta for gates on by default and Alpha for the
others (``PodDisruptionBudget`` is GA).
"""

from __future__ import annotations

from pkg.features.featuregate import ALPHA, BETA, GA, FeatureSpec

DYNAMIC_SCHEDULER_CHECK = "DynamicSchedulerCheck"
GANG_PENDING_PODS_CONDITION_PATCH = "GangPendingPodsConditionPatch"
ENABLE_BATCH_SCHEDULE_NODE_SNAPSHOT = "EnableBatchScheduleNodeSnapshot"
POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
GENERIC_EPHEMERAL_VOLUME = "GenericEphemeralVolume"
RESIZE_POD = "ResizePod"
ENABLE_INLINE_BATCH_SCHEDULE = "EnableInlineBatchSchedule"
# Reservation affinity selects by the Reservation's labels alone, not merged over its node's.
OMIT_NODE_LABELS_FOR_RESERVATION = "OmitNodeLabelsForReservation"
ELASTIC_QUOTA_IGNORE_TERMINATING_POD = "ElasticQuotaIgnoreTerminatingPod"
ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD = "ElasticQuotaImmediateIgnoreTerminatingPod"

_ON = (DYNAMIC_SCHEDULER_CHECK, GANG_PENDING_PODS_CONDITION_PATCH,
       ENABLE_BATCH_SCHEDULE_NODE_SNAPSHOT, CSI_STORAGE_CAPACITY, GENERIC_EPHEMERAL_VOLUME)
_OFF = (
    "CompatibleCSIStorageCapacity", "DisableCSIStorageCapacityInformer",
    "CompatiblePodDisruptionBudget", "DisablePodDisruptionBudgetInformer",
    "DisableDynamicResourceAllocationInformer", RESIZE_POD, "MultiQuotaTree",
    "ElasticQuotaIgnorePodOverhead", ELASTIC_QUOTA_IGNORE_TERMINATING_POD,
    ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD, "ElasticQuotaGuaranteeUsage",
    "DisableDefaultQuota", "SupportParentQuotaSubmitPod", "LazyReservationRestore",
    OMIT_NODE_LABELS_FOR_RESERVATION, "SkipReservationFitsNode", "DevicePluginAdaption",
    "CleanExpiredReservationAllocated", "SkipFilterWithNominatedPods", "SyncBarrier",
    "CrossSchedulerNomination", ENABLE_INLINE_BATCH_SCHEDULE,
)

SCHEDULER_FEATURE_GATES: dict[str, FeatureSpec] = {
    **{name: FeatureSpec(True, BETA) for name in _ON},
    POD_DISRUPTION_BUDGET: FeatureSpec(True, GA),
    **{name: FeatureSpec(False, ALPHA) for name in _OFF},
}
