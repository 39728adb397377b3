"""Arguments of Koordinator's scheduler plugins: types, defaults and validation.

Corresponds to Koordinator ``pkg/scheduler/apis/config/v1/types.go`` and ``defaults.go``
(``SetDefaults_*Args``) and ``pkg/scheduler/apis/config/validation/validation_pluginargs.go``,
whose defaults and rules the models apply. One model serves every
apiVersion (upstream's v1beta2/v1beta3 copies are subsets of v1).

Resource maps are ``dict[str, int]``; durations are seconds (see ``base.py``). Beyond upstream's
validation, the scoring strategy types of NodeNUMAResource, DeviceShare and NodeResourcesFitPlus
are checked when loading (upstream's plugins refuse an unknown type only when they are built).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from api.core import quantity_value
from api.extension.coscheduling import DEFAULT_GANG_MATCH_POLICY
from api.extension.device_share import (
    RESOURCE_FPGA,
    RESOURCE_GPU_MEMORY,
    RESOURCE_GPU_MEMORY_RATIO,
    RESOURCE_HUAWEI_NPU_CORE,
    RESOURCE_RDMA,
)
from api.extension.load_aware import AggregationType
from api.extension.numa import CPUBindPolicy
from api.extension.payload import GoInt32, GoInt64, GoResourceList
from pkg.util.validation import is_qualified_name
from scheduler.apis.config.base import ConfigModel, DurationSeconds, PluginArgs
from scheduler.apis.config.errors import FieldError, Loc, in_range, map_in_range, one_of
from scheduler.apis.config.kube_args import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    ResourceSpec,
    resource_weight_errors,
)
from scheduler.apis.config.names import is_extended_resource_name

BALANCED_ALLOCATION = "BalancedAllocation"
KOORD_SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED_ALLOCATION)

# math.MaxInt64 / 5: larger quota maxima overflow when the quota controller patches them.
DEFAULT_QUOTA_GROUP_MAX = str((2**63 - 1) // 5)

Int64Map = dict[str, GoInt64]


def _cpu_memory(cpu: int, memory: int) -> Int64Map:
    return {"cpu": cpu, "memory": memory}


class ScoringStrategy(ConfigModel):
    """Koordinator's scoring strategy (NodeNUMAResource, DeviceShare)."""

    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=list)

    def errors(self, loc: Loc) -> list[FieldError]:
        return (one_of(loc + ("type",), self.type, KOORD_SCORING_STRATEGY_TYPES)
                + resource_weight_errors(loc + ("resources",), self.resources))


def _least_allocated(*resources: str) -> ScoringStrategy:
    return ScoringStrategy(type=LEAST_ALLOCATED,
                           resources=[ResourceSpec(name=r, weight=1) for r in resources])


# --- LoadAwareScheduling ---------------------------------------------------------------------

AGGREGATION_TYPES = tuple(t.value for t in AggregationType)


class LoadAwareSchedulingAggregatedArgs(ConfigModel):
    usage_thresholds: Int64Map = Field(default_factory=dict)
    usage_aggregation_type: str = ""
    usage_aggregated_duration: DurationSeconds = 0.0
    score_aggregation_type: str = ""
    score_aggregated_duration: DurationSeconds = 0.0

    def errors(self, loc: Loc) -> list[FieldError]:
        errors = map_in_range(loc + ("usageThresholds",), self.usage_thresholds, 0, 100)
        for name in ("usage", "score"):
            kind = getattr(self, f"{name}_aggregation_type")
            if kind:
                errors += one_of(loc + (f"{name}AggregationType",), kind, AGGREGATION_TYPES)
            duration = getattr(self, f"{name}_aggregated_duration")
            if duration < 0:
                errors.append(FieldError(loc + (f"{name}AggregatedDuration",),
                                         f"must be >= 0, got {duration}s"))
        return errors


class LoadAwareSchedulingArgs(PluginArgs):
    PLUGIN = "LoadAwareScheduling"

    filter_expired_node_metrics: bool = True
    node_metric_expiration_seconds: GoInt64 = 180
    enable_schedule_when_node_metrics_expired: bool = False
    # Defaulted to cpu:1, memory:1 only when empty and dominantResourceWeight is 0.
    resource_weights: Int64Map = Field(default_factory=dict)
    dominant_resource_weight: GoInt64 = 0
    usage_thresholds: Int64Map = Field(default_factory=lambda: _cpu_memory(65, 95))
    # Empty: the prod-usage filter is off.
    prod_usage_thresholds: Int64Map = Field(default_factory=dict)
    prod_usage_include_sys: bool = False
    score_according_prod_usage: bool = False
    # "": the default estimator.
    estimator: str = ""
    # Missing cpu/memory entries are filled from the default.
    estimated_scaling_factors: Int64Map = Field(default_factory=lambda: _cpu_memory(85, 70))
    estimated_seconds_after_pod_scheduled: GoInt64 | None = None
    estimated_seconds_after_initialized: GoInt64 | None = None
    allow_customize_estimation: bool = False
    aggregated: LoadAwareSchedulingAggregatedArgs | None = None
    supported_resources: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _defaults(self) -> LoadAwareSchedulingArgs:
        if not self.resource_weights and self.dominant_resource_weight == 0:
            self.resource_weights = _cpu_memory(1, 1)
        self.fill_zero("usage_thresholds")
        self.estimated_scaling_factors = {**_cpu_memory(85, 70), **self.estimated_scaling_factors}
        return self

    def validate_args(self) -> list[FieldError]:
        errors = []
        expiration = self.node_metric_expiration_seconds
        if expiration <= 0:
            errors.append(FieldError(("nodeMetricExpirationSeconds",),
                                     f"must be positive, got {expiration}"))
        errors += map_in_range(("resourceWeights",), self.resource_weights, 1, 100)
        errors += in_range(("dominantResourceWeight",), self.dominant_resource_weight, 0, 100)
        errors += map_in_range(("usageThresholds",), self.usage_thresholds, 0, 100)
        errors += map_in_range(("estimatedScalingFactors",), self.estimated_scaling_factors, 1, 100)
        missing = [r for r in self.resource_weights if r not in self.estimated_scaling_factors]
        if missing:
            errors.append(FieldError(("estimatedScalingFactors",),
                                     f"has no factor for weighted resource {missing[0]!r}"))
        if self.aggregated is not None:
            errors += self.aggregated.errors(("aggregated",))
        return errors


# --- NodeNUMAResource ------------------------------------------------------------------------

CPU_BIND_POLICIES = ("", CPUBindPolicy.FULL_PCPUS.value, CPUBindPolicy.SPREAD_BY_PCPUS.value)


class NodeNUMAResourceArgs(PluginArgs):
    PLUGIN = "NodeNUMAResource"

    # "": pods that do not ask for a bind policy get no CPUs bound.
    default_cpu_bind_policy: str = Field(CPUBindPolicy.FULL_PCPUS.value,
                                         alias="defaultCPUBindPolicy")
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: _least_allocated("cpu", "memory"))
    numa_scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: _least_allocated("cpu", "memory"))

    def validate_args(self) -> list[FieldError]:
        return (one_of(("defaultCPUBindPolicy",), self.default_cpu_bind_policy, CPU_BIND_POLICIES)
                + self.scoring_strategy.errors(("scoringStrategy",))
                + self.numa_scoring_strategy.errors(("numaScoringStrategy",)))


# --- Reservation -----------------------------------------------------------------------------


class PreAllocationConfig(ConfigModel):
    enable_cluster_mode: bool = False
    # Upstream documents "pod.koordinator.sh/is-pre-allocatable" and
    # "pod.koordinator.sh/pre-allocatable-priority" as the keys used when these are empty.
    cluster_label_key: str = ""
    cluster_priority_annotation_key: str = ""
    prefer_no_pre_allocated_pods: bool = False


class ReservationSelectorIndex(ConfigModel):
    enabled: bool = False
    key_prefixes: list[str] = Field(default_factory=list)
    keys: list[str] = Field(default_factory=list)


class ReservationArgs(PluginArgs):
    PLUGIN = "Reservation"

    enable_preemption: bool = False
    min_candidate_nodes_percentage: GoInt32 = 10
    min_candidate_nodes_absolute: GoInt32 = 100
    controller_workers: GoInt32 = 1
    # 0 means the default for these three.
    gc_duration_seconds: GoInt64 = 86400
    gc_interval_seconds: GoInt64 = 60
    disable_garbage_collection: bool = False
    resync_interval_seconds: GoInt64 = 60
    pre_allocation_config: PreAllocationConfig | None = None
    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    reservation_selector_index: ReservationSelectorIndex | None = None

    @model_validator(mode="after")
    def _defaults(self) -> ReservationArgs:
        self.fill_zero("gc_duration_seconds", "gc_interval_seconds", "resync_interval_seconds")
        return self

    def validate_args(self) -> list[FieldError]:
        errors = in_range(("minCandidateNodesPercentage",), self.min_candidate_nodes_percentage,
                          0, 100)
        for name in ("min_candidate_nodes_absolute", "gc_duration_seconds",
                     "gc_interval_seconds", "resync_interval_seconds"):
            value = getattr(self, name)
            if value < 0:
                errors.append(FieldError((type(self).model_fields[name].alias or name,),
                                         f"must not be negative, got {value}"))
        for i, name in enumerate(self.ignored_resources):
            if not is_extended_resource_name(name):
                errors.append(FieldError(("ignoredResources", i), f"{name!r} must be an extended "
                                         "resource name (e.g. example.com/gpu); native resources "
                                         "cannot be ignored"))
        for i, group in enumerate(self.ignored_resource_groups):
            errors += _resource_group_errors(("ignoredResourceGroups", i), group)
        return errors


def _resource_group_errors(loc: Loc, group: str) -> list[FieldError]:
    if "/" in group:
        return [FieldError(loc, "resource group name can't contain '/'")]
    problems = is_qualified_name(group)
    if problems:
        return [FieldError(loc, p) for p in problems]
    if not is_extended_resource_name(group + "/x"):
        return [FieldError(loc, f"{group!r} must be usable as an extended resource prefix (a "
                           "DNS subdomain other than the reserved 'kubernetes.io')")]
    return []


# --- ElasticQuota ----------------------------------------------------------------------------


class HookPluginConf(ConfigModel):
    key: str = ""
    factory_key: str = ""
    factory_args: str = ""


def _max_quota() -> dict[str, str]:
    return {"cpu": DEFAULT_QUOTA_GROUP_MAX, "memory": DEFAULT_QUOTA_GROUP_MAX}


class ElasticQuotaArgs(PluginArgs):
    PLUGIN = "ElasticQuota"

    delay_evict_time: DurationSeconds = 120.0
    revoke_pod_interval: DurationSeconds = 1.0
    default_quota_group_max: GoResourceList = Field(default_factory=_max_quota)
    system_quota_group_max: GoResourceList = Field(default_factory=_max_quota)
    quota_group_namespace: str = "koordinator-system"
    monitor_all_quotas: bool = False
    enable_check_parent_quota: bool = False
    enable_runtime_quota: bool = True
    enable_min_quota_scale: bool = True
    disable_default_quota_preemption: bool = True
    enable_queue_hint: bool = False
    quota_snapshot_update_interval: DurationSeconds = 120.0
    hook_plugins: list[HookPluginConf] = Field(default_factory=list)

    @model_validator(mode="after")
    def _defaults(self) -> ElasticQuotaArgs:
        self.fill_zero("default_quota_group_max", "system_quota_group_max",
                       "quota_group_namespace")
        return self

    def validate_args(self) -> list[FieldError]:
        errors = []
        for field, quotas in (("defaultQuotaGroupMax", self.default_quota_group_max),
                              ("systemQuotaGroupMax", self.system_quota_group_max)):
            errors += [FieldError((field, name), f"must not be negative, got {q}")
                       for name, q in quotas.items() if quantity_value(q) < 0]
        for field, seconds in (("delayEvictTime", self.delay_evict_time),
                               ("revokePodInterval", self.revoke_pod_interval)):
            if seconds < 0:
                errors.append(FieldError((field,), f"must not be negative, got {seconds}s"))
        return errors


# --- Coscheduling ----------------------------------------------------------------------------


class CoschedulingArgs(PluginArgs):
    PLUGIN = "Coscheduling"

    default_timeout: DurationSeconds = 600.0
    controller_workers: GoInt64 = 1
    skip_check_schedule_cycle: bool = False
    enable_preemption: bool = False
    aware_network_topology: bool = False
    default_match_policy: str = DEFAULT_GANG_MATCH_POLICY.value

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.default_timeout < 0:
            errors.append(FieldError(("defaultTimeout",),
                                     f"must not be negative, got {self.default_timeout}s"))
        if self.controller_workers < 1:
            errors.append(FieldError(("controllerWorkers",),
                                     f"must be at least 1, got {self.controller_workers}"))
        return errors


# --- DeviceShare -----------------------------------------------------------------------------


class GPUSharedResourceTemplatesConfig(ConfigModel):
    config_map_namespace: str = "koordinator-system"
    config_map_name: str = "gpu-shared-resource-templates"
    matched_resources: list[str] = Field(default_factory=lambda: [RESOURCE_HUAWEI_NPU_CORE])


class GPUShareUnsupportedModel(ConfigModel):
    vendor: str = ""
    model: str = ""


class DeviceShareArgs(PluginArgs):
    PLUGIN = "DeviceShare"

    # Deprecated and ignored upstream.
    allocator: str = ""
    scoring_strategy: ScoringStrategy = Field(default_factory=lambda: _least_allocated(
        RESOURCE_GPU_MEMORY_RATIO, RESOURCE_GPU_MEMORY, RESOURCE_RDMA, RESOURCE_FPGA))
    disable_device_numa_topology_alignment: bool = Field(
        False, alias="disableDeviceNUMATopologyAlignment")
    gpu_shared_resource_templates_config: GPUSharedResourceTemplatesConfig = Field(
        default_factory=GPUSharedResourceTemplatesConfig)
    gpu_share_unsupported_models: list[GPUShareUnsupportedModel] = Field(default_factory=list)

    def validate_args(self) -> list[FieldError]:
        return self.scoring_strategy.errors(("scoringStrategy",))


# --- Smaller plugins -------------------------------------------------------------------------


class ScarceResourceAvoidanceArgs(PluginArgs):
    PLUGIN = "ScarceResourceAvoidance"

    resources: list[str] = Field(default_factory=list)


class ResourcesType(ConfigModel):
    type: str = ""
    weight: GoInt64 = 0


class NodeResourcesFitPlusArgs(PluginArgs):
    PLUGIN = "NodeResourcesFitPlus"

    resources: dict[str, ResourcesType] = Field(default_factory=dict)

    def validate_args(self) -> list[FieldError]:
        return [e for name, r in self.resources.items()
                for e in one_of(("resources", name, "type"), r.type,
                                (MOST_ALLOCATED, LEAST_ALLOCATED))]


class SchedulingHintArgs(PluginArgs):
    PLUGIN = "SchedulingHint"

    max_hint_nodes: GoInt32 = 100

    def validate_args(self) -> list[FieldError]:
        if self.max_hint_nodes > 0:
            return []
        return [FieldError(("maxHintNodes",), f"must be positive, got {self.max_hint_nodes}")]


KOORD_ARGS_KINDS: dict[str, type[PluginArgs]] = {
    cls.PLUGIN: cls for cls in (
        LoadAwareSchedulingArgs, NodeNUMAResourceArgs, ReservationArgs, ElasticQuotaArgs,
        CoschedulingArgs, DeviceShareArgs, ScarceResourceAvoidanceArgs, NodeResourcesFitPlusArgs,
        SchedulingHintArgs,
    )
}
