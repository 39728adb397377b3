"""Validation of a defaulted KubeSchedulerConfiguration.

Corresponds to kube-scheduler v1.35's ``ValidateKubeSchedulerConfiguration``
(``pkg/scheduler/apis/config/validation/validation.go``) with component-base's leader election
and client connection rules, plus the rules of every known plugin args kind (each model's
``validate_args``). Two additions are checks kube-scheduler makes only later, when it starts:
client-go's ``renewDeadline > 1.2 * retryPeriod``, and the args of Koordinator plugins, which
upstream validates when building the plugin.
"""

from __future__ import annotations

from pkg.util.validation import is_qualified_name
from scheduler.apis.config.base import PluginArgs
from scheduler.apis.config.errors import FieldError, Loc, in_range, nest
from scheduler.apis.config.extension_points import MULTI_POINT, ExtensionPoint
from scheduler.apis.config.names import is_extended_resource_name
from scheduler.apis.config.types import (
    Extender,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    LeaderElectionConfiguration,
)

# In-tree plugins kube-scheduler removed (v1.31); naming one is an error in every version.
REMOVED_PLUGINS = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")

# client-go's leaderelection.JitterFactor: renewDeadline must exceed retryPeriod times this.
JITTER_FACTOR = 1.2


def validate_config(config: KubeSchedulerConfiguration) -> list[FieldError]:
    """Every problem with ``config`` (empty when valid)."""
    errors = nest(("leaderElection",), leader_election_errors(config.leader_election))
    if config.client_connection.burst < 0:
        errors.append(FieldError(("clientConnection", "burst"),
                                 f"must not be negative, got {config.client_connection.burst}"))
    for field, address in (("healthzBindAddress", config.healthz_bind_address),
                           ("metricsBindAddress", config.metrics_bind_address)):
        if address and address.rpartition(":")[2] != "0":
            errors.append(FieldError((field,), "must be empty or with an explicit 0 port"))
    if config.parallelism <= 0:
        errors.append(FieldError(("parallelism",),
                                 f"must be greater than zero, got {config.parallelism}"))
    if not config.profiles:
        errors.append(FieldError(("profiles",), "at least one profile is required"))
    first_with_name: dict[str, int] = {}
    for i, profile in enumerate(config.profiles):
        errors += nest(("profiles", i), _profile_errors(profile))
        name = profile.scheduler_name or ""
        if name in first_with_name:
            errors.append(FieldError(("profiles", i, "schedulerName"), f"duplicate value "
                                     f"{name!r} (also profiles[{first_with_name[name]}])"))
        first_with_name.setdefault(name, i)
    errors += _common_queue_sort_errors(config.profiles)
    errors += in_range(("percentageOfNodesToScore",), config.percentage_of_nodes_to_score, 0, 100)
    if config.pod_initial_backoff_seconds <= 0:
        errors.append(FieldError(("podInitialBackoffSeconds",), f"must be greater than 0, got "
                                 f"{config.pod_initial_backoff_seconds}"))
    if config.pod_max_backoff_seconds < config.pod_initial_backoff_seconds:
        errors.append(FieldError(("podMaxBackoffSeconds",), "must be greater than or equal to "
                                 f"podInitialBackoffSeconds ({config.pod_initial_backoff_seconds})"
                                 f", got {config.pod_max_backoff_seconds}"))
    errors += nest(("extenders",), _extenders_errors(config.extenders))
    return errors


def leader_election_errors(le: LeaderElectionConfiguration) -> list[FieldError]:
    """component-base's leader election rules (also koord-descheduler's)."""
    if not le.leader_elect:
        return []
    errors = [FieldError((field,), f"must be greater than zero, got {seconds}s")
              for field, seconds in (("leaseDuration", le.lease_duration),
                                     ("renewDeadline", le.renew_deadline),
                                     ("retryPeriod", le.retry_period)) if seconds <= 0]
    if le.lease_duration <= le.renew_deadline:
        errors.append(FieldError(("leaseDuration",), f"must be greater than renewDeadline "
                                 f"({le.renew_deadline}s), got {le.lease_duration}s"))
    if le.renew_deadline <= JITTER_FACTOR * le.retry_period:
        errors.append(FieldError(("renewDeadline",), f"must be greater than {JITTER_FACTOR} x "
                                 f"retryPeriod ({le.retry_period}s), got {le.renew_deadline}s"))
    if le.resource_lock != "leases":
        errors.append(FieldError(("resourceLock",),
                                 f"must be 'leases', got {le.resource_lock!r}"))
    errors += [FieldError((field,), "required") for field, value in (
        ("resourceName", le.resource_name), ("resourceNamespace", le.resource_namespace))
        if not value]
    return errors


def _profile_errors(profile: KubeSchedulerProfile) -> list[FieldError]:
    errors = [] if profile.scheduler_name else [FieldError(("schedulerName",), "required")]
    if profile.percentage_of_nodes_to_score is not None:
        errors += in_range(("percentageOfNodesToScore",), profile.percentage_of_nodes_to_score,
                           0, 100)
    if profile.plugins is not None:
        for point in (*ExtensionPoint, MULTI_POINT):
            for i, plugin in enumerate(profile.plugins.get(point).enabled):
                if plugin.name in REMOVED_PLUGINS:
                    errors.append(FieldError(("plugins", str(point), "enabled", i),
                                             f"{plugin.name} was removed from kube-scheduler"))
    seen: dict[str, int] = {}
    for j, pc in enumerate(profile.plugin_config):
        loc: Loc = ("pluginConfig", j)
        if pc.name in seen:
            errors.append(FieldError(loc + ("name",), f"duplicate value {pc.name!r} "
                                     f"(also pluginConfig[{seen[pc.name]}])"))
        seen.setdefault(pc.name, j)
        if isinstance(pc.args, PluginArgs):
            errors += nest(loc + ("args",), pc.args.validate_args())
    return errors


def _common_queue_sort_errors(profiles: list[KubeSchedulerProfile]) -> list[FieldError]:
    """Every profile must have the queueSort set and queueSort args of the first one: the
    scheduling queue is shared."""
    if not profiles or profiles[0].plugins is None:
        return []
    canon = profiles[0].plugins.queue_sort
    errors = []
    if len(canon.enabled) > 1:
        errors.append(FieldError(("profiles", 0, "plugins", "queueSort", "enabled"),
                                 "only one queue sort plugin can be enabled"))
    name = canon.enabled[0].name if canon.enabled else None
    canon_args = profiles[0].plugin_args().get(name) if name else None
    for i, profile in enumerate(profiles[1:], start=1):
        if profile.plugins is None or profile.plugins.queue_sort != canon:
            errors.append(FieldError(("profiles", i, "plugins", "queueSort"),
                                     "must be the same for all profiles"))
        for j, pc in enumerate(profile.plugin_config):
            if pc.name == name and pc.args != canon_args:
                errors.append(FieldError(("profiles", i, "pluginConfig", j, "args"),
                                         "queueSort args must be the same for all profiles"))
    return errors


def _extenders_errors(extenders: list[Extender]) -> list[FieldError]:
    errors = []
    managed: set[str] = set()
    for i, extender in enumerate(extenders):
        if extender.prioritize_verb and extender.weight <= 0:
            errors.append(FieldError((i, "weight"), f"must be positive when prioritizeVerb is "
                                     f"set, got {extender.weight}"))
        for j, resource in enumerate(extender.managed_resources):
            loc: Loc = (i, "managedResources", j, "name")
            problems = is_qualified_name(resource.name)
            errors += [FieldError(loc, p) for p in problems]
            if not problems and not is_extended_resource_name(resource.name):
                errors.append(FieldError(loc, f"{resource.name!r} is not an extended resource "
                                         "name"))
            if resource.name in managed:
                errors.append(FieldError(loc, f"duplicate extender managed resource "
                                         f"{resource.name!r}"))
            managed.add(resource.name)
    binders = sum(1 for e in extenders if e.bind_verb)
    if binders > 1:
        errors.append(FieldError((), f"only one extender can implement bind, found {binders}"))
    return errors
