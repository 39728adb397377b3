"""Arguments of kube-scheduler's in-tree plugins: types, defaults and validation.

Corresponds to kube-scheduler v1.35's ``k8s.io/kube-scheduler/config/v1/types_pluginargs.go``,
``pkg/scheduler/apis/config/v1/defaults.go`` (``SetDefaults_*Args``) and
``pkg/scheduler/apis/config/validation/validation_pluginargs.go``, with the scheduler feature
gates at their v1.35 defaults: ``StorageCapacityScoring`` off (so VolumeBinding's ``shape`` is
refused), ``DRASchedulerFilterTimeout``, ``DRADeviceBindingConditions`` and
``DRAResourceClaimDeviceStatus`` on.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from api.core import NodeSelectorRequirement, NodeSelectorTerm
from api.extension.payload import GoInt32, GoInt64
from api.meta import LabelSelector
from pkg.util.validation import is_qualified_name
from scheduler.apis.config.base import ConfigModel, DurationSeconds, PluginArgs
from scheduler.apis.config.errors import FieldError, Loc, in_range, one_of

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SCORING_STRATEGY_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# The highest score a RequestedToCapacityRatio shape point may give (MaxCustomPriorityScore).
MAX_CUSTOM_PRIORITY_SCORE = 10

SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"


class ResourceSpec(ConfigModel):
    """A resource and its weight in a scoring strategy."""

    name: str
    weight: GoInt64 = 0


def default_resources() -> list[ResourceSpec]:
    """cpu and memory, weight 1 each (upstream ``defaultResourceSpec``)."""
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


def default_zero_weights(resources: list[ResourceSpec]) -> None:
    """An unset (or 0) weight means 1."""
    for resource in resources:
        resource.weight = resource.weight or 1


def resource_weight_errors(loc: Loc, resources: list[ResourceSpec]) -> list[FieldError]:
    """Every weight must be in 1..100 (``validateResources``)."""
    return [e for i, r in enumerate(resources)
            for e in in_range(loc + (i, "weight"), r.weight, 1, 100)]


class UtilizationShapePoint(ConfigModel):
    utilization: GoInt32 = 0
    score: GoInt32 = 0


def shape_errors(loc: Loc, shape: list[UtilizationShapePoint]) -> list[FieldError]:
    """``validateFunctionShape``: at least one point, utilization ascending in 0..100, score in
    0..MAX_CUSTOM_PRIORITY_SCORE."""
    if not shape:
        return [FieldError(loc, "at least one point must be specified")]
    errors = []
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            errors.append(FieldError(loc + (i, "utilization"),
                                     "values must be sorted in increasing order"))
            break
    for i, point in enumerate(shape):
        errors += in_range(loc + (i, "utilization"), point.utilization, 0, 100)
        errors += in_range(loc + (i, "score"), point.score, 0, MAX_CUSTOM_PRIORITY_SCORE)
    return errors


class RequestedToCapacityRatioParam(ConfigModel):
    shape: list[UtilizationShapePoint] = Field(default_factory=list)


class ScoringStrategy(ConfigModel):
    # An empty type is refused by validation, as upstream (only a missing strategy is defaulted).
    type: str = ""
    resources: list[ResourceSpec] = Field(default_factory=default_resources)
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None


class NodeResourcesFitArgs(PluginArgs):
    PLUGIN = "NodeResourcesFit"

    ignored_resources: list[str] = Field(default_factory=list)
    ignored_resource_groups: list[str] = Field(default_factory=list)
    scoring_strategy: ScoringStrategy = Field(
        default_factory=lambda: ScoringStrategy(type=LEAST_ALLOCATED))

    @model_validator(mode="after")
    def _defaults(self) -> NodeResourcesFitArgs:
        self.scoring_strategy.fill_zero("resources")
        default_zero_weights(self.scoring_strategy.resources)
        return self

    def validate_args(self) -> list[FieldError]:
        errors = []
        for i, name in enumerate(self.ignored_resources):
            errors += [FieldError(("ignoredResources", i), p)
                       for p in is_qualified_name(name)]
        for i, group in enumerate(self.ignored_resource_groups):
            loc: Loc = ("ignoredResourceGroups", i)
            if "/" in group:
                errors.append(FieldError(loc, "resource group name can't contain '/'"))
            errors += [FieldError(loc, p) for p in is_qualified_name(group)]
        strategy = self.scoring_strategy
        errors += one_of(("scoringStrategy", "type"), strategy.type, SCORING_STRATEGY_TYPES)
        errors += resource_weight_errors(("scoringStrategy", "resources"), strategy.resources)
        ratio_loc: Loc = ("scoringStrategy", "requestedToCapacityRatio")
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if strategy.requested_to_capacity_ratio is None:
                errors.append(FieldError(
                    ratio_loc, "must be specified when type is RequestedToCapacityRatio"))
            else:
                errors += shape_errors(ratio_loc + ("shape",),
                                       strategy.requested_to_capacity_ratio.shape)
        elif strategy.requested_to_capacity_ratio is not None:
            errors.append(FieldError(ratio_loc,
                                     "must be nil when type is not RequestedToCapacityRatio"))
        return errors


class NodeResourcesBalancedAllocationArgs(PluginArgs):
    PLUGIN = "NodeResourcesBalancedAllocation"

    resources: list[ResourceSpec] = Field(default_factory=default_resources)

    @model_validator(mode="after")
    def _defaults(self) -> NodeResourcesBalancedAllocationArgs:
        self.fill_zero("resources")
        default_zero_weights(self.resources)
        return self

    def validate_args(self) -> list[FieldError]:
        errors, seen = [], set()
        for i, resource in enumerate(self.resources):
            if resource.name in seen:
                errors.append(FieldError(("resources", i, "name"),
                                         f"duplicate value {resource.name!r}"))
            seen.add(resource.name)
            if resource.weight != 1:
                errors.append(FieldError(("resources", i, "weight"),
                                         f"must be 1, got {resource.weight}"))
        return errors


class InterPodAffinityArgs(PluginArgs):
    PLUGIN = "InterPodAffinity"

    hard_pod_affinity_weight: GoInt32 = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate_args(self) -> list[FieldError]:
        return in_range(("hardPodAffinityWeight",), self.hard_pod_affinity_weight, 0, 100)


class TopologySpreadConstraint(ConfigModel):
    """corev1.TopologySpreadConstraint."""

    max_skew: GoInt32 = 0
    topology_key: str = ""
    when_unsatisfiable: str = ""
    label_selector: LabelSelector | None = None
    min_domains: GoInt32 | None = None
    node_affinity_policy: str | None = None
    node_taints_policy: str | None = None
    match_label_keys: list[str] | None = None


class PodTopologySpreadArgs(PluginArgs):
    PLUGIN = "PodTopologySpread"

    default_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    defaulting_type: str = SYSTEM_DEFAULTING

    @model_validator(mode="after")
    def _defaults(self) -> PodTopologySpreadArgs:
        self.fill_zero("defaulting_type")
        return self

    def validate_args(self) -> list[FieldError]:
        errors = one_of(("defaultingType",), self.defaulting_type,
                        (SYSTEM_DEFAULTING, LIST_DEFAULTING))
        if self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            errors.append(FieldError(("defaultingType",),
                                     "must be List when defaultConstraints are given"))
        seen: dict[tuple[str, str], int] = {}
        for i, c in enumerate(self.default_constraints):
            loc: Loc = ("defaultConstraints", i)
            if c.max_skew <= 0:
                errors.append(FieldError(loc + ("maxSkew",), f"must be positive, got {c.max_skew}"))
            key_problems = is_qualified_name(c.topology_key) if c.topology_key else [
                "required"]
            errors += [FieldError(loc + ("topologyKey",), p) for p in key_problems]
            if not c.when_unsatisfiable:
                errors.append(FieldError(loc + ("whenUnsatisfiable",), "required"))
            else:
                errors += one_of(loc + ("whenUnsatisfiable",), c.when_unsatisfiable,
                                 ("DoNotSchedule", "ScheduleAnyway"))
            if c.label_selector is not None:
                errors.append(FieldError(loc + ("labelSelector",), "must not be set: the "
                                         "selector is deduced for each pod"))
            key = (c.topology_key, c.when_unsatisfiable)
            if key in seen:
                errors.append(FieldError(loc, f"duplicate of defaultConstraints[{seen[key]}]"))
            seen.setdefault(key, i)
        return errors


class NodeSelector(ConfigModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(ConfigModel):
    weight: GoInt32 = 0
    preference: NodeSelectorTerm = Field(default_factory=NodeSelectorTerm)


class NodeAffinity(ConfigModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list)


def _requirement_errors(loc: Loc, r: NodeSelectorRequirement, *, field: bool) -> list[FieldError]:
    """What ``nodeaffinity.NewNodeSelector`` refuses in one label or field requirement."""
    values = r.values or []
    if field:
        errors = [] if r.key == "metadata.name" else [
            FieldError(loc + ("key",), f"unsupported field selector key {r.key!r}: only "
                       "'metadata.name' is supported")]
        if r.operator not in ("In", "NotIn"):
            errors += one_of(loc + ("operator",), r.operator, ("In", "NotIn"))
        elif len(values) != 1:
            errors.append(FieldError(loc + ("values",), "must have exactly one value"))
        return errors
    errors = [FieldError(loc + ("key",), p) for p in is_qualified_name(r.key)]
    if r.operator in ("In", "NotIn"):
        if not values:
            errors.append(FieldError(loc + ("values",), f"must be non-empty for {r.operator}"))
    elif r.operator in ("Exists", "DoesNotExist"):
        if values:
            errors.append(FieldError(loc + ("values",), f"must be empty for {r.operator}"))
    elif r.operator in ("Gt", "Lt"):
        if len(values) != 1 or not values[0].lstrip("-").isdigit():
            errors.append(FieldError(loc + ("values",),
                                     f"must be a single integer for {r.operator}"))
    else:
        errors += one_of(loc + ("operator",), r.operator,
                         ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    return errors


def _term_errors(loc: Loc, term: NodeSelectorTerm) -> list[FieldError]:
    errors = []
    for i, r in enumerate(term.match_expressions or []):
        errors += _requirement_errors(loc + ("matchExpressions", i), r, field=False)
    for i, r in enumerate(term.match_fields or []):
        errors += _requirement_errors(loc + ("matchFields", i), r, field=True)
    return errors


class NodeAffinityArgs(PluginArgs):
    PLUGIN = "NodeAffinity"

    added_affinity: NodeAffinity | None = None

    def validate_args(self) -> list[FieldError]:
        affinity = self.added_affinity
        if affinity is None:
            return []
        errors = []
        required = affinity.required_during_scheduling_ignored_during_execution
        if required is not None:
            loc: Loc = ("addedAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
            for i, term in enumerate(required.node_selector_terms):
                errors += _term_errors(loc + ("nodeSelectorTerms", i), term)
        preferred_loc: Loc = ("addedAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
        preferred = affinity.preferred_during_scheduling_ignored_during_execution
        for i, weighted in enumerate(preferred):
            errors += _term_errors(preferred_loc + (i, "preference"), weighted.preference)
        return errors


class DefaultPreemptionArgs(PluginArgs):
    PLUGIN = "DefaultPreemption"

    min_candidate_nodes_percentage: GoInt32 = 10
    min_candidate_nodes_absolute: GoInt32 = 100

    def validate_args(self) -> list[FieldError]:
        percentage = self.min_candidate_nodes_percentage
        absolute = self.min_candidate_nodes_absolute
        errors = in_range(("minCandidateNodesPercentage",), percentage, 0, 100)
        if absolute < 0:
            errors.append(FieldError(("minCandidateNodesAbsolute",),
                                     f"must not be negative, got {absolute}"))
        if percentage == 0 and absolute == 0:
            errors.append(FieldError(("minCandidateNodesPercentage",), "cannot be zero at the "
                                     "same time as minCandidateNodesAbsolute"))
        return errors


class VolumeBindingArgs(PluginArgs):
    PLUGIN = "VolumeBinding"

    bind_timeout_seconds: GoInt64 = 600
    shape: list[UtilizationShapePoint] | None = None

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.bind_timeout_seconds < 0:
            errors.append(FieldError(("bindTimeoutSeconds",),
                                     f"must not be negative, got {self.bind_timeout_seconds}"))
        if self.shape is not None:
            errors.append(FieldError(("shape",), "unexpected field `shape`, remove it or turn on "
                                     "the feature gate StorageCapacityScoring"))
        return errors


class DynamicResourcesArgs(PluginArgs):
    PLUGIN = "DynamicResources"

    filter_timeout: DurationSeconds = 10.0
    binding_timeout: DurationSeconds = 600.0

    def validate_args(self) -> list[FieldError]:
        errors = []
        if self.filter_timeout < 0:
            errors.append(FieldError(("filterTimeout",), "must be zero or positive"))
        if self.binding_timeout < 1:
            errors.append(FieldError(("bindingTimeout",), "must be at least 1 second"))
        return errors


KUBE_ARGS_KINDS: dict[str, type[PluginArgs]] = {
    cls.PLUGIN: cls for cls in (
        NodeResourcesFitArgs, NodeResourcesBalancedAllocationArgs, InterPodAffinityArgs,
        PodTopologySpreadArgs, NodeAffinityArgs, DefaultPreemptionArgs, VolumeBindingArgs,
        DynamicResourcesArgs,
    )
}
