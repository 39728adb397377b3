"""Arguments of Koordinator's descheduler plugins: types, defaults and validation.

Corresponds to Koordinator ``pkg/descheduler/apis/config/v1alpha2/types_pluginargs.go`` and
``types_loadaware.go`` (the args kinds registered in the ``descheduler`` scheme), their
``SetDefaults_*Args`` in ``defaults.go``, and ``pkg/descheduler/apis/config/validation``
(``ValidateMigrationControllerArgs``, ``ValidateLowLoadUtilizationArgs``), whose defaults and
rules the models apply; the args of the wrapped sigs.k8s.io/descheduler plugins (their
``pkg/framework/plugins/<plugin>`` types, defaults and validation); and (a block at the end) the
args of the Balance plugins CustomPriority, FragmentationAware, ScaleDownBinPack and the wrapped
HighNodeUtilization and LowNodeUtilization.

Beyond upstream's load-time validation: ``evictionPolicy``, ``skipEvictionGates`` and
``evictQPS`` strings are checked when loading (upstream refuses them when the controller is
built), LowNodeLoad's rules are checked at the field the user wrote (top level or
``nodePools[i]``) rather than at upstream's internal pool index, and each
RemovePodsViolatingNodeAffinity ``nodeAffinityType`` must be one upstream runs (upstream's
plugin only fails on an unknown one when it runs).
"""

from __future__ import annotations

import re

from pydantic import Field, model_validator

from api.core import DeleteOptions, IntOrString
from api.extension.payload import GoFloat, GoInt32, GoInt64
from api.meta import LabelSelector
from pkg.util.labels import InvalidSelectorError, parse_selector
from pkg.util.validation import is_dns1123_subdomain
from scheduler.apis.config.base import ConfigModel, DurationSeconds, PluginArgs
from scheduler.apis.config.errors import FieldError, Loc, one_of

# PodMigrationJob modes (apis/scheduling/v1alpha1).
RESERVATION_FIRST = "ReservationFirst"
EVICT_DIRECTLY = "EvictDirectly"
JOB_MODES = (RESERVATION_FIRST, EVICT_DIRECTLY)

# The evictors of migration/evictor: how a migrated pod is removed.
EVICTION_POLICIES = ("Eviction", "Delete", "SoftEviction")

# The gates, filters and throttlers ``skipEvictionGates`` may bypass.
EVICTION_GATES = (
    "MaxUnavailablePerWorkload", "MaxMigratingPerWorkload", "MaxMigratingPerNode",
    "MaxMigratingPerNamespace", "MaxMigratingGlobally", "ExpectedReplicas", "PVC", "BarePods",
    "LocalStorage", "SystemCritical", "PriorityThreshold", "LabelSelector", "Namespaces",
    "NodeFit",
)

# Object limiter keys (MigrationLimitObjectType).
LIMIT_WORKLOAD = "workload"
LIMIT_NAMESPACE = "namespace"

# Percentages (0..100 in absolute mode) per resource name.
ResourceThresholds = dict[str, GoFloat]

_PERCENT = re.compile(r"^[+-]?\d+%$")


def selector_errors(loc: Loc, selector: LabelSelector | None) -> list[FieldError]:
    """An error when ``selector`` is one Kubernetes would refuse."""
    if selector is None:
        return []
    try:
        parse_selector(selector)
    except InvalidSelectorError as err:
        return [FieldError(loc, str(err))]
    return []


def int_or_percent_errors(loc: Loc, value: int | str | None) -> list[FieldError]:
    """An error unless ``value`` is an integer or a percentage such as ``"10%"``
    (``intstr.GetScaledValueFromIntOrPercent``)."""
    if value is None or isinstance(value, int) or _PERCENT.match(value):
        return []
    return [FieldError(loc, f"must be an integer or a percentage such as '10%', got {value!r}")]


class Namespaces(ConfigModel):
    """Namespaces a plugin works on: only ``include``, or all but ``exclude``."""

    include: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)

    def errors(self, loc: Loc) -> list[FieldError]:
        if self.include and self.exclude:
            return [FieldError(loc, "only one of Include/Exclude namespaces can be set")]
        return []


class PriorityThreshold(ConfigModel):
    """Pods with a priority at or above ``value`` (or that of class ``name``) are kept."""

    value: GoInt32 | None = None
    name: str = ""


class MigrationObjectLimiter(ConfigModel):
    """At most ``maxMigrating`` migrations of one object per ``duration``."""

    duration: DurationSeconds = 0.0
    max_migrating: IntOrString | None = None
    burst: GoInt64 = 0


class ArbitrationArgs(ConfigModel):
    # Never read upstream: arbitration always runs.
    enabled: bool = False
    interval: DurationSeconds | None = None


class MigrationControllerArgs(PluginArgs):
    """Args of MigrationController, the default evict and filter plugin (``Evict`` creates a
    PodMigrationJob)."""

    PLUGIN = "MigrationController"

    dry_run: bool = False
    max_concurrent_reconciles: GoInt32 = 1
    evict_failed_bare_pods: bool = False
    evict_all_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    priority_threshold: PriorityThreshold | None = None
    label_selector: LabelSelector | None = None
    namespaces: Namespaces | None = None
    # Only for the DefaultEvictor used by PreEvictionFilter.
    node_fit: bool = False
    node_selector: str = ""
    skip_eviction_gates: list[str] = Field(default_factory=list)
    # None or 0: unlimited.
    max_migrating_globally: GoInt32 | None = None
    max_migrating_per_node: GoInt32 = 2
    max_migrating_per_namespace: GoInt32 | None = None
    max_migrating_per_workload: IntOrString | None = None
    max_unavailable_per_workload: IntOrString | None = None
    skip_check_expected_replicas: bool | None = None
    object_limiters: dict[str, MigrationObjectLimiter] = Field(default_factory=dict)
    default_job_mode: str = RESERVATION_FIRST
    default_job_ttl: DurationSeconds = Field(default=300.0, alias="defaultJobTTL")
    scheduler_names: list[str] = Field(default_factory=lambda: ["koord-scheduler"])
    # config.Float64OrString: a number or a string holding one.
    evict_qps: GoFloat | str = Field(default=10.0, alias="evictQPS", union_mode="left_to_right")
    evict_burst: GoInt32 = 1
    eviction_policy: str = "Eviction"
    default_delete_options: DeleteOptions | None = None
    arbitration_args: ArbitrationArgs | None = None

    @model_validator(mode="after")
    def _defaults(self) -> MigrationControllerArgs:
        self.fill_zero("default_job_mode", "scheduler_names", "eviction_policy")
        if not self.object_limiters:
            self.object_limiters = {LIMIT_WORKLOAD: MigrationObjectLimiter(duration=300.0)}
        if self.arbitration_args is None:
            self.arbitration_args = ArbitrationArgs(enabled=True)
        if self.arbitration_args.interval is None:
            self.arbitration_args.interval = 0.5
        return self

    def evict_qps_value(self) -> float | None:
        """``evictQPS`` as a number; None when it is a string that holds none."""
        if isinstance(self.evict_qps, float):
            return self.evict_qps
        try:
            return float(self.evict_qps)
        except ValueError:
            return None

    def validate_args(self) -> list[FieldError]:
        errors = [FieldError((field,), f"{field} should be greater or equal 0")
                  for field, value in (("maxMigratingGlobally", self.max_migrating_globally),
                                       ("maxMigratingPerNamespace",
                                        self.max_migrating_per_namespace),
                                       ("maxMigratingPerNode", self.max_migrating_per_node))
                  if value is not None and value < 0]
        errors += int_or_percent_errors(("maxMigratingPerWorkload",),
                                        self.max_migrating_per_workload)
        errors += int_or_percent_errors(("maxUnavailablePerWorkload",),
                                        self.max_unavailable_per_workload)
        qps = self.evict_qps_value()
        if qps is None:
            errors.append(FieldError(("evictQPS",), f"must be a number, got {self.evict_qps!r}"))
        elif qps <= 0:
            errors.append(FieldError(("evictQPS",), "evictQPS must be greater than 0"))
        if self.evict_burst <= 0:
            errors.append(FieldError(("evictBurst",), "evictBurst must be greater than 0"))
        errors += selector_errors(("labelSelector",), self.label_selector)
        if self.namespaces is not None:
            errors += self.namespaces.errors(("namespaces",))
        if self.max_concurrent_reconciles < 1:
            errors.append(FieldError(("maxConcurrentReconciles",), "maxConcurrentReconciles "
                                     "should be greater than or equal to 1"))
        errors += one_of(("defaultJobMode",), self.default_job_mode, JOB_MODES)
        if self.default_job_ttl < 0:
            errors.append(FieldError(("defaultJobTTL",),
                                     "defaultJobTTL should be positive or zero"))
        errors += one_of(("evictionPolicy",), self.eviction_policy, EVICTION_POLICIES)
        for i, gate in enumerate(self.skip_eviction_gates):
            errors += one_of(("skipEvictionGates", i), gate, EVICTION_GATES)
        for key, limiter in self.object_limiters.items():
            errors += int_or_percent_errors(("objectLimiters", key, "maxMigrating"),
                                            limiter.max_migrating)
        return errors


class LoadAnomalyCondition(ConfigModel):
    """How many consecutive passes over (under) the high thresholds make a node abnormal
    (normal again)."""

    timeout: DurationSeconds | None = None
    consecutive_abnormalities: GoInt64 = Field(default=0, ge=0, le=2**32 - 1)
    consecutive_normalities: GoInt64 = Field(default=0, ge=0, le=2**32 - 1)


def default_anomaly_condition() -> LoadAnomalyCondition:
    return LoadAnomalyCondition(timeout=60.0, consecutive_abnormalities=5,
                                consecutive_normalities=3)


class LowNodeLoadPodSelector(ConfigModel):
    name: str = ""
    selector: LabelSelector | None = None


class LowNodeLoadNodePool(ConfigModel):
    """A pool of nodes with its own thresholds; unset thresholds, weights and anomaly condition
    are the top-level ones (``LowNodeLoadArgs.node_pools_effective``)."""

    name: str = ""
    node_selector: LabelSelector | None = None
    use_deviation_thresholds: bool = False
    high_thresholds: ResourceThresholds | None = None
    low_thresholds: ResourceThresholds | None = None
    prod_high_thresholds: ResourceThresholds | None = None
    prod_low_thresholds: ResourceThresholds | None = None
    resource_weights: dict[str, GoInt64] | None = None
    anomaly_condition: LoadAnomalyCondition | None = None

    def errors(self) -> list[FieldError]:
        """Upstream's per-pool rules, located relative to the pool (or the top-level args)."""
        errors = selector_errors(("nodeSelector",), self.node_selector)
        low, high = self.low_thresholds or {}, self.high_thresholds or {}
        prod_low, prod_high = self.prod_low_thresholds or {}, self.prod_high_thresholds or {}
        for field, values in (("highThresholds", high), ("lowThresholds", low),
                              ("prodHighThresholds", prod_high),
                              ("prodLowThresholds", prod_low)):
            errors += [FieldError((field, name), f"percentage must be greater than or equal "
                                  f"to 0, got {value:g}")
                       for name, value in values.items() if value < 0]
        for field, values, other_field, others in (
                ("lowThresholds", low, "highThresholds", high),
                ("prodHighThresholds", prod_high, "highThresholds", high),
                ("prodLowThresholds", prod_low, "prodHighThresholds", prod_high)):
            errors += [FieldError((field, name), f"must be less than or equal to "
                                  f"{other_field}.{name} ({others[name]:g}), got {value:g}")
                       for name, value in values.items() if name in others
                       and value > others[name]]
        if self.anomaly_condition is not None:
            for field, count in (
                    ("consecutiveAbnormalities", self.anomaly_condition.consecutive_abnormalities),
                    ("consecutiveNormalities", self.anomaly_condition.consecutive_normalities)):
                if count <= 0:
                    errors.append(FieldError(("anomalyCondition", field),
                                             f"{field} must be greater than 0"))
        return errors


DEFAULT_POOL_NAME = "__default_node_pool__"


class LowNodeLoadArgs(PluginArgs):
    """Args of LowNodeLoad, the balance plugin moving pods off nodes whose measured usage is
    high to nodes whose usage is low."""

    PLUGIN = "LowNodeLoad"

    paused: bool = False
    dry_run: bool = False
    number_of_nodes: GoInt32 = 0
    node_metric_expiration_seconds: GoInt64 = 180
    evictable_namespaces: Namespaces | None = None
    node_selector: LabelSelector | None = None
    pod_selectors: list[LowNodeLoadPodSelector] = Field(default_factory=list)
    node_fit: bool = True
    use_deviation_thresholds: bool = False
    high_thresholds: ResourceThresholds | None = None
    low_thresholds: ResourceThresholds | None = None
    prod_high_thresholds: ResourceThresholds | None = None
    prod_low_thresholds: ResourceThresholds | None = None
    resource_weights: dict[str, GoInt64] | None = None
    anomaly_condition: LoadAnomalyCondition | None = None
    detector_cache_timeout: DurationSeconds = 300.0
    node_pools: list[LowNodeLoadNodePool] = Field(default_factory=list)

    @model_validator(mode="after")
    def _defaults(self) -> LowNodeLoadArgs:
        if self.anomaly_condition is None:
            self.anomaly_condition = default_anomaly_condition()
        elif self.anomaly_condition.consecutive_abnormalities == 0:
            self.anomaly_condition.consecutive_abnormalities = 5
        # Upstream's else-if: both zero leaves normalities 0, which validation then refuses.
        elif self.anomaly_condition.consecutive_normalities == 0:
            self.anomaly_condition.consecutive_normalities = 3
        weights = {"cpu": 1, "memory": 1}
        weights.update((name, 1) for name in (self.low_thresholds or {}))
        weights.update((name, 1) for name in (self.high_thresholds or {}))
        if self.resource_weights is None:
            self.resource_weights = weights
        else:
            for name, weight in weights.items():
                if self.resource_weights.get(name, 0) <= 0:
                    self.resource_weights[name] = weight
        return self

    def node_pools_effective(self) -> list[LowNodeLoadNodePool]:
        """The pools LowNodeLoad runs, in order: ``__default_node_pool__`` from the top-level
        fields, then the configured pools with unset values taken from the top level."""
        top = self.anomaly_condition or default_anomaly_condition()
        default = LowNodeLoadNodePool(
            name=DEFAULT_POOL_NAME, node_selector=self.node_selector,
            use_deviation_thresholds=self.use_deviation_thresholds,
            high_thresholds=self.high_thresholds, low_thresholds=self.low_thresholds,
            prod_high_thresholds=self.prod_high_thresholds,
            prod_low_thresholds=self.prod_low_thresholds,
            resource_weights=self.resource_weights, anomaly_condition=top)
        pools = [default.model_copy(deep=True)]
        for pool in self.node_pools:
            pool = pool.model_copy(deep=True)
            for field in ("high_thresholds", "low_thresholds", "prod_high_thresholds",
                          "prod_low_thresholds", "resource_weights"):
                if getattr(pool, field) is None:
                    setattr(pool, field, getattr(default, field))
            if pool.anomaly_condition is None:
                pool.anomaly_condition = top.model_copy()
            else:
                condition = pool.anomaly_condition
                condition.timeout = condition.timeout if condition.timeout is not None \
                    else top.timeout
                condition.consecutive_abnormalities = (condition.consecutive_abnormalities
                                                       or top.consecutive_abnormalities)
                condition.consecutive_normalities = (condition.consecutive_normalities
                                                     or top.consecutive_normalities)
            pools.append(pool)
        return pools

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.number_of_nodes < 0:
            errors.append(FieldError(("numberOfNodes",),
                                     "must be greater than or equal to 0"))
        if self.node_metric_expiration_seconds <= 0:
            errors.append(FieldError(("nodeMetricExpirationSeconds",),
                                     "must be greater than 0"))
        if self.evictable_namespaces is not None:
            errors += self.evictable_namespaces.errors(("evictableNamespaces",))
        for i, pod_selector in enumerate(self.pod_selectors):
            errors += selector_errors(("podSelectors", i, "selector"), pod_selector.selector)
        pools = self.node_pools_effective()
        # The default pool's problems are those of the top-level fields.
        errors += pools[0].errors()
        for i, pool in enumerate(pools[1:]):
            errors += [e.under(("nodePools", i)) for e in pool.errors()]
        return errors


class DefaultEvictorArgs(PluginArgs):
    """Args of DefaultEvictor, usable as filter plugin (sigs.k8s.io/descheduler's checks) and
    as evict plugin (a direct Eviction)."""

    PLUGIN = "DefaultEvictor"

    dry_run: bool | None = None
    max_no_of_pods_to_evict_per_node: GoInt64 | None = None
    max_no_of_pods_to_evict_per_namespace: GoInt64 | None = None
    evict_failed_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_system_critical_pods: bool = False
    ignore_pvc_pods: bool = False
    node_fit: bool = False
    priority_threshold: PriorityThreshold | None = None
    label_selector: LabelSelector | None = None

    def validate_args(self) -> list[FieldError]:
        return selector_errors(("labelSelector",), self.label_selector)


# --- the wrapped sigs.k8s.io/descheduler v0.35.1 Deschedule and Balance plugins -----------------
# Upstream ``pkg/framework/plugins/<plugin>/{types,defaults,validation}.go``: their args decode
# over upstream's defaults and are checked by upstream's rules, each error at its field.

NODE_AFFINITY_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
NODE_AFFINITY_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NODE_AFFINITY_TYPES = (NODE_AFFINITY_REQUIRED, NODE_AFFINITY_PREFERRED)

# Pod phases, pod status reasons and container waiting reasons PodLifeTime's ``states`` may name.
POD_LIFE_TIME_STATES = (
    "ContainerCreating", "CrashLoopBackOff", "CreateContainerConfigError",
    "CreateContainerError", "ErrImagePull", "Failed", "ImagePullBackOff", "InvalidImageName",
    "NodeAffinity", "NodeLost", "Pending", "PodInitializing", "Running", "Shutdown",
    "Succeeded", "UnexpectedAdmissionError", "Unknown",
)
TOO_MANY_RESTARTS_STATES = ("CrashLoopBackOff", "Running")

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
TOPOLOGY_CONSTRAINTS = (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)


def _pod_selection_errors(namespaces: Namespaces | None,
                          label_selector: LabelSelector | None) -> list[FieldError]:
    """The namespace and label-selector rules every wrapped plugin shares."""
    errors = namespaces.errors(("namespaces",)) if namespaces is not None else []
    return errors + selector_errors(("labelSelector",), label_selector)


def _states_errors(states: list[str], allowed: tuple[str, ...]) -> list[FieldError]:
    if all(state in allowed for state in states):
        return []
    return [FieldError(("states",), f"states must be one of [{' '.join(allowed)}]")]


class PodLifeTimeArgs(PluginArgs):
    """Evicts pods older than ``maxPodLifeTimeSeconds`` (in ``states``, when given)."""

    PLUGIN = "PodLifeTime"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    max_pod_life_time_seconds: GoInt64 | None = Field(default=None, ge=0)
    states: list[str] = Field(default_factory=list)
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.max_pod_life_time_seconds is None:
            errors.append(FieldError(("maxPodLifeTimeSeconds",),
                                     "MaxPodLifeTimeSeconds not set"))
        errors += _pod_selection_errors(self.namespaces, self.label_selector)
        return errors + _states_errors(self.states, POD_LIFE_TIME_STATES)


class RemoveFailedPodsArgs(PluginArgs):
    """Evicts pods in phase Failed (with one of ``reasons`` / ``exitCodes``, when given) once
    they are older than ``minPodLifetimeSeconds`` (an hour by default)."""

    PLUGIN = "RemoveFailedPods"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    exclude_owner_kinds: list[str] = Field(default_factory=list)
    min_pod_lifetime_seconds: GoInt64 | None = Field(default=None, ge=0)
    reasons: list[str] = Field(default_factory=list)
    exit_codes: list[GoInt32] = Field(default_factory=list)
    including_init_containers: bool = False

    @model_validator(mode="after")
    def _defaults(self) -> RemoveFailedPodsArgs:
        if self.min_pod_lifetime_seconds is None:
            self.min_pod_lifetime_seconds = 3600
        return self

    def validate_args(self) -> list[FieldError]:
        return _pod_selection_errors(self.namespaces, self.label_selector)


class RemovePodsHavingTooManyRestartsArgs(PluginArgs):
    """Evicts pods whose containers restarted ``podRestartThreshold`` times or more."""

    PLUGIN = "RemovePodsHavingTooManyRestarts"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    pod_restart_threshold: GoInt32 = 0
    including_init_containers: bool = False
    states: list[str] = Field(default_factory=list)

    def validate_args(self) -> list[FieldError]:
        errors = _pod_selection_errors(self.namespaces, self.label_selector)
        if self.pod_restart_threshold < 1:
            errors.append(FieldError(("podRestartThreshold",),
                                     "invalid PodsHavingTooManyRestarts threshold"))
        return errors + _states_errors(self.states, TOO_MANY_RESTARTS_STATES)


class RemovePodsViolatingNodeAffinityArgs(PluginArgs):
    """Evicts pods whose node no longer satisfies their node affinity of ``nodeAffinityType``
    (a kind Koordinator registers)."""

    PLUGIN = "RemovePodsViolatingNodeAffinity"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    node_affinity_type: list[str] = Field(default_factory=list)

    def validate_args(self) -> list[FieldError]:
        errors = []
        if not self.node_affinity_type:
            errors.append(FieldError(("nodeAffinityType",), "nodeAffinityType needs to be set"))
        for i, kind in enumerate(self.node_affinity_type):
            errors += one_of(("nodeAffinityType", i), kind, NODE_AFFINITY_TYPES)
        return errors + _pod_selection_errors(self.namespaces, self.label_selector)


class RemovePodsViolatingNodeTaintsArgs(PluginArgs):
    """Evicts pods that do not tolerate a NoSchedule (and, when asked, PreferNoSchedule) taint
    of their node; ``excludedTaints``/``includedTaints`` name taints as ``key`` or
    ``key=value``."""

    PLUGIN = "RemovePodsViolatingNodeTaints"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    include_prefer_no_schedule: bool = False
    excluded_taints: list[str] = Field(default_factory=list)
    included_taints: list[str] = Field(default_factory=list)

    def validate_args(self) -> list[FieldError]:
        errors = _pod_selection_errors(self.namespaces, self.label_selector)
        if self.excluded_taints and self.included_taints:
            errors.append(FieldError(("includedTaints",), "either includedTaints or "
                                     "excludedTaints can be set, but not both"))
        return errors


class RemovePodsViolatingInterPodAntiAffinityArgs(PluginArgs):
    """Evicts pods whose required anti-affinity another pod in the topology violates."""

    PLUGIN = "RemovePodsViolatingInterPodAntiAffinity"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None

    def validate_args(self) -> list[FieldError]:
        return _pod_selection_errors(self.namespaces, self.label_selector)


class RemoveDuplicatesArgs(PluginArgs):
    """Spreads pods of one owner running the same images evenly over the nodes they fit."""

    PLUGIN = "RemoveDuplicates"

    namespaces: Namespaces | None = None
    exclude_owner_kinds: list[str] = Field(default_factory=list)

    def validate_args(self) -> list[FieldError]:
        return _pod_selection_errors(self.namespaces, None)


class RemovePodsViolatingTopologySpreadConstraintArgs(PluginArgs):
    """Evicts the fewest pods that bring each topology spread constraint (of the kinds in
    ``constraints``) within its maxSkew."""

    PLUGIN = "RemovePodsViolatingTopologySpreadConstraint"

    namespaces: Namespaces | None = None
    label_selector: LabelSelector | None = None
    constraints: list[str] = Field(default_factory=list)
    topology_balance_node_fit: bool | None = None

    @model_validator(mode="after")
    def _defaults(self) -> RemovePodsViolatingTopologySpreadConstraintArgs:
        if not self.constraints:
            self.constraints = [DO_NOT_SCHEDULE]
        if self.topology_balance_node_fit is None:
            self.topology_balance_node_fit = True
        return self

    def validate_args(self) -> list[FieldError]:
        errors = _pod_selection_errors(self.namespaces, self.label_selector)
        for i, constraint in enumerate(self.constraints):
            errors += one_of(("constraints", i), constraint, TOPOLOGY_CONSTRAINTS)
        return errors


# Plugin name → the model of its args (kind: the model's class name).
ARGS_KINDS: dict[str, type[PluginArgs]] = {model.PLUGIN: model for model in (
    LowNodeLoadArgs, MigrationControllerArgs, DefaultEvictorArgs,
    # the wrapped sigs.k8s.io/descheduler plugins
    PodLifeTimeArgs, RemoveFailedPodsArgs, RemovePodsHavingTooManyRestartsArgs,
    RemovePodsViolatingNodeAffinityArgs, RemovePodsViolatingNodeTaintsArgs,
    RemovePodsViolatingInterPodAntiAffinityArgs, RemoveDuplicatesArgs,
    RemovePodsViolatingTopologySpreadConstraintArgs)}


# --- Balance plugins: sigs.k8s.io/descheduler nodeutilization, CustomPriority, ---------------
# --- FragmentationAware, ScaleDownBinPack ----------------------------------------------------
# sigs.k8s.io/descheduler ``pkg/framework/plugins/nodeutilization`` (types.go, defaults.go,
# validation.go) and koordinator ``pkg/descheduler/apis/config/v1alpha2/types_custom_priority.go``,
# ``types_fragmentationaware.go``, ``types_scaledownbinpack.go`` with their defaults and
# ``validation/validation_{custom_priority,fragmentationaware,scaledownbinpack}.go``.

MAX_RESOURCE_PERCENTAGE = 100.0
EVICTION_MODE_ONLY_THRESHOLDING_RESOURCES = "OnlyThresholdingResources"
EVICTION_MODES = (EVICTION_MODE_ONLY_THRESHOLDING_RESOURCES,)


def thresholds_errors(loc: Loc, thresholds: ResourceThresholds | None) -> list[FieldError]:
    """nodeutilization ``validateThresholds``: at least one resource, each within [0, 100]."""
    if not thresholds:
        return [FieldError(loc, "no resource threshold is configured")]
    return [FieldError(loc + (name,), f"{name} threshold not in [0, 100] range")
            for name, percent in thresholds.items()
            if not 0 <= percent <= MAX_RESOURCE_PERCENTAGE]


def exclude_only_errors(loc: Loc, namespaces: Namespaces | None) -> list[FieldError]:
    """The nodeutilization plugins count every pod's requests, so namespaces can only be kept
    from eviction, not chosen."""
    if namespaces is not None and namespaces.include:
        return [FieldError(loc, "only Exclude namespaces can be set, inclusion is not "
                           "supported")]
    return []


def eviction_modes_errors(modes: list[str]) -> list[FieldError]:
    return [FieldError(("evictionModes", i), f"invalid eviction mode {mode}")
            for i, mode in enumerate(modes) if mode not in EVICTION_MODES]


class EvictionLimits(ConfigModel):
    """At most ``node`` evictions per source node by the plugin in one pass."""

    node: GoInt64 | None = Field(default=None, ge=0)


class Prometheus(ConfigModel):
    query: str = ""


class MetricsUtilization(ConfigModel):
    """Actual usage from metrics-server or Prometheus (not available here: see
    ``LowNodeUtilizationArgs.validate_args``)."""

    metrics_server: bool = False
    source: str = ""
    prometheus: Prometheus | None = None


class HighNodeUtilizationArgs(PluginArgs):
    """Args of the wrapped HighNodeUtilization: evict pods from nodes whose requests are below
    ``thresholds`` so they can be packed onto the others."""

    PLUGIN = "HighNodeUtilization"

    thresholds: ResourceThresholds | None = None
    number_of_nodes: GoInt64 = 0
    eviction_modes: list[str] = Field(default_factory=list)
    evictable_namespaces: Namespaces | None = None

    def validate_args(self) -> list[FieldError]:
        return (exclude_only_errors(("evictableNamespaces",), self.evictable_namespaces)
                + thresholds_errors(("thresholds",), self.thresholds)
                + eviction_modes_errors(self.eviction_modes))


class LowNodeUtilizationArgs(PluginArgs):
    """Args of the wrapped LowNodeUtilization: evict pods from nodes whose requests are above
    ``targetThresholds`` towards nodes below ``thresholds``."""

    PLUGIN = "LowNodeUtilization"

    use_deviation_thresholds: bool = False
    thresholds: ResourceThresholds | None = None
    target_thresholds: ResourceThresholds | None = None
    number_of_nodes: GoInt64 = 0
    metrics_utilization: MetricsUtilization | None = None
    eviction_modes: list[str] = Field(default_factory=list)
    evictable_namespaces: Namespaces | None = None
    eviction_limits: EvictionLimits | None = None

    def validate_args(self) -> list[FieldError]:
        errors = exclude_only_errors(("evictableNamespaces",), self.evictable_namespaces)
        low, high = self.thresholds or {}, self.target_thresholds or {}
        errors += thresholds_errors(("thresholds",), self.thresholds)
        errors += thresholds_errors(("targetThresholds",), self.target_thresholds)
        if low and high:
            if low.keys() != high.keys():
                errors.append(FieldError(("targetThresholds",), "thresholds and "
                                         "targetThresholds configured different resources"))
            elif not self.use_deviation_thresholds:
                errors += [FieldError(("thresholds", name), f"thresholds' {name} percentage is "
                                      "greater than targetThresholds'")
                           for name, value in low.items() if value > high[name]]
        if self.metrics_utilization is not None:
            # Upstream reads metrics-server or Prometheus; NodeMetric-based balancing is
            # LowNodeLoad's, so the request-based plugin refuses instead of guessing.
            errors.append(FieldError(("metricsUtilization",), "not supported: "
                                     "LowNodeUtilization balances pod requests here, use "
                                     "LowNodeLoad to balance measured usage"))
        return errors + eviction_modes_errors(self.eviction_modes)


class BalancePodSelector(ConfigModel):
    """Pods a Koordinator balance plugin may move: any selector matching is enough."""

    name: str = ""
    selector: LabelSelector | None = None


def pod_selectors_errors(selectors: list[BalancePodSelector]) -> list[FieldError]:
    return [e for i, s in enumerate(selectors)
            for e in selector_errors(("podSelectors", i, "selector"), s.selector)]


def _namespaces_errors(namespaces: Namespaces | None) -> list[FieldError]:
    return namespaces.errors(("evictableNamespaces",)) if namespaces is not None else []


def _percent_errors(loc: Loc, thresholds: ResourceThresholds | None) -> list[FieldError]:
    return [FieldError(loc + (name,), f"resource threshold for {name} must be between 0 and "
                       f"100, got {value:f}")
            for name, value in (thresholds or {}).items() if not 0 <= value <= 100]


def _dns1123_errors(loc: Loc, name: str) -> list[FieldError]:
    if not name:
        return [FieldError(loc, "cannot be empty")]
    problems = is_dns1123_subdomain(name)
    return [FieldError(loc, f"{name} is invalid: {'; '.join(problems)}")] if problems else []


CUSTOM_PRIORITY_BEST_EFFORT = "BestEffort"
CUSTOM_PRIORITY_DRAIN_NODE = "DrainNode"


class ResourcePriority(ConfigModel):
    """One level of CustomPriority's eviction order: the nodes it holds."""

    name: str = ""
    node_selector: LabelSelector | None = None
    # Validated like upstream; upstream's plugin does not read them yet.
    keep_threshold: ResourceThresholds | None = None
    reject_threshold: ResourceThresholds | None = None


class CustomPriorityArgs(PluginArgs):
    """Args of CustomPriority: move pods from nodes of an expensive level of ``evictionOrder``
    to nodes of the cheaper levels after it."""

    PLUGIN = "CustomPriority"

    paused: bool = False
    dry_run: bool = False
    evictable_namespaces: Namespaces | None = None
    node_selector: LabelSelector | None = None
    pod_selectors: list[BalancePodSelector] = Field(default_factory=list)
    node_fit: bool = True
    eviction_order: list[ResourcePriority] = Field(default_factory=list)
    mode: str = CUSTOM_PRIORITY_BEST_EFFORT
    auto_cordon: bool = False

    @model_validator(mode="after")
    def _defaults(self) -> CustomPriorityArgs:
        self.fill_zero("mode")
        return self

    def validate_args(self) -> list[FieldError]:
        errors = []
        if len(self.eviction_order) < 2:
            errors.append(FieldError(("evictionOrder",), "CustomPriority requires at least 2 "
                                     "resource priority levels"))
        seen: set[str] = set()
        for i, level in enumerate(self.eviction_order):
            loc: Loc = ("evictionOrder", i)
            errors += _dns1123_errors(loc + ("name",), level.name)
            if level.name and level.name in seen:
                errors.append(FieldError(loc + ("name",),
                                         f"duplicate priority name: {level.name}"))
            seen.add(level.name)
            if level.node_selector is None:
                errors.append(FieldError(loc + ("nodeSelector",), "cannot be nil"))
            errors += selector_errors(loc + ("nodeSelector",), level.node_selector)
            errors += _percent_errors(loc + ("keepThreshold",), level.keep_threshold)
            errors += _percent_errors(loc + ("rejectThreshold",), level.reject_threshold)
        for i, pod_selector in enumerate(self.pod_selectors):
            errors += _dns1123_errors(("podSelectors", i, "name"), pod_selector.name)
        errors += pod_selectors_errors(self.pod_selectors)
        errors += selector_errors(("nodeSelector",), self.node_selector)
        errors += _namespaces_errors(self.evictable_namespaces)
        return errors + one_of(("mode",), self.mode,
                               (CUSTOM_PRIORITY_BEST_EFFORT, CUSTOM_PRIORITY_DRAIN_NODE))


def _default_resources() -> list[str]:
    return ["cpu", "memory"]


def _duplicates_errors(resources: list[str]) -> list[FieldError]:
    return [FieldError(("resources", i), f"Duplicate value: {r!r}")
            for i, r in enumerate(resources) if r in resources[:i]]


class FragmentationAwareArgs(PluginArgs):
    """Args of FragmentationAware: on nodes whose requested share of ``resources`` is uneven,
    evict the pod whose leaving evens it out most."""

    PLUGIN = "FragmentationAware"

    paused: bool = False
    dry_run: bool = False
    node_selector: LabelSelector | None = None
    evictable_namespaces: Namespaces | None = None
    pod_selectors: list[BalancePodSelector] = Field(default_factory=list)
    node_fit: bool = True
    resources: list[str] = Field(default_factory=_default_resources)
    imbalance_threshold: GoFloat = 0.15
    min_improvement_threshold: GoFloat = 0.02

    @model_validator(mode="after")
    def _defaults(self) -> FragmentationAwareArgs:
        self.fill_zero("resources")
        return self

    def validate_args(self) -> list[FieldError]:
        errors = _duplicates_errors(self.resources)
        for field, value in (("imbalanceThreshold", self.imbalance_threshold),
                             ("minImprovementThreshold", self.min_improvement_threshold)):
            if value < 0:
                errors.append(FieldError((field,), "must be greater than or equal to 0"))
        errors += selector_errors(("nodeSelector",), self.node_selector)
        errors += pod_selectors_errors(self.pod_selectors)
        return errors + _namespaces_errors(self.evictable_namespaces)


SCALE_DOWN_CALCULATE_ONLY = "CalculateOnly"
SCALE_DOWN_EVICT_DIRECTLY = "EvictDirectly"


class ScaleDownBinPackArgs(PluginArgs):
    """Args of ScaleDownBinPack: rank the selected pods so scaling down empties whole nodes,
    then either write the ranks as pod deletion costs or evict the first ``maxPodsToEvict``."""

    PLUGIN = "ScaleDownBinPack"

    paused: bool = False
    strategy: str = SCALE_DOWN_CALCULATE_ONLY
    max_pods_to_evict: GoInt32 | None = None
    node_selector: LabelSelector | None = None
    pod_selectors: list[BalancePodSelector] = Field(default_factory=list)
    evictable_namespaces: Namespaces | None = None
    resources: list[str] = Field(default_factory=_default_resources)
    resource_weights: dict[str, GoFloat] | None = None

    @model_validator(mode="after")
    def _defaults(self) -> ScaleDownBinPackArgs:
        self.fill_zero("strategy", "resources")
        if self.resource_weights is None:
            self.resource_weights = dict.fromkeys(self.resources, 1.0)
        return self

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.strategy not in (SCALE_DOWN_CALCULATE_ONLY, SCALE_DOWN_EVICT_DIRECTLY):
            errors.append(FieldError(("strategy",), "strategy must be CalculateOnly or "
                                     "EvictDirectly"))
        if self.strategy == SCALE_DOWN_EVICT_DIRECTLY and (self.max_pods_to_evict or 0) <= 0:
            errors.append(FieldError(("maxPodsToEvict",), "maxPodsToEvict must be positive when "
                                     "strategy is EvictDirectly"))
        errors += selector_errors(("nodeSelector",), self.node_selector)
        errors += pod_selectors_errors(self.pod_selectors)
        errors += _namespaces_errors(self.evictable_namespaces)
        return errors + [FieldError(("resourceWeights", r), "weights must be positive finite "
                                    "floats")
                         for r, w in (self.resource_weights or {}).items() if w <= 0]


ARGS_KINDS.update({model.PLUGIN: model for model in (
    HighNodeUtilizationArgs, LowNodeUtilizationArgs, CustomPriorityArgs, FragmentationAwareArgs,
    ScaleDownBinPackArgs)})
