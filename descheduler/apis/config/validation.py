"""Validation of a defaulted DeschedulerConfiguration.

Corresponds to Koordinator's ``ValidateDeschedulerConfiguration``
(``pkg/descheduler/apis/config/validation/validation.go``) with component-base's leader election
and client connection rules, plus the rules of every known plugin args kind (each model's
``validate_args``; upstream checks only MigrationController's there and the others' when
building the plugins). The plugin checks upstream's framework makes when it is built are made
here too, so a bad file stops start-up with the field named: plugin names must be registered,
implement the point they are placed at and appear once per point, and exactly one evict plugin
must be enabled.
"""

from __future__ import annotations

import ipaddress

from descheduler.apis.config.args import selector_errors
from descheduler.apis.config.defaults import split_host_port
from descheduler.apis.config.registry import EVICT, INTERFACES, PLUGIN_POINTS
from descheduler.apis.config.types import (
    EXTENSION_POINTS,
    DeschedulerConfiguration,
    DeschedulerProfile,
)
from pkg.util.validation import is_dns1123_subdomain
from scheduler.apis.config.base import PluginArgs
from scheduler.apis.config.errors import FieldError, Loc, nest
from scheduler.apis.config.validation import leader_election_errors


def validate_config(config: DeschedulerConfiguration) -> list[FieldError]:
    """Every problem with ``config`` (empty when valid)."""
    errors = nest(("leaderElection",), leader_election_errors(config.leader_election))
    if config.client_connection.burst < 0:
        errors.append(FieldError(("clientConnection", "burst"),
                                 f"must not be negative, got {config.client_connection.burst}"))
    if not config.profiles:
        errors.append(FieldError(("profiles",), "at least one profile is required"))
    first_with_name: dict[str, int] = {}
    for i, profile in enumerate(config.profiles):
        errors += nest(("profiles", i), _profile_errors(profile))
        first = first_with_name.setdefault(profile.name, i)
        if first != i:
            errors.append(FieldError(("profiles", i, "name"), f"duplicate value "
                                     f"{profile.name!r} (also profiles[{first}])"))
    for field, address in (("healthzBindAddress", config.healthz_bind_address),
                           ("metricsBindAddress", config.metrics_bind_address)):
        errors += [FieldError((field,), problem) for problem in _socket_address_problems(address)]
    errors += selector_errors(("nodeSelector",), config.node_selector)
    return errors


def _socket_address_problems(address: str | None) -> list[str]:
    """Upstream ``isValidSocketAddr``, without resolving host names: a host must be an IP or a
    DNS name."""
    split = split_host_port(address or "")
    if split is None:
        return [f"must be a valid socket address (host:port), got {address!r}"]
    host, port = split
    if host and not _is_ip(host) and is_dns1123_subdomain(host.lower()):
        return [f"invalid host {host!r} in socket address"]
    if not port:
        return ["port must not be empty in socket address"]
    return []


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _profile_errors(profile: DeschedulerProfile) -> list[FieldError]:
    errors = [] if profile.name else [FieldError(("name",), "required")]
    errors += selector_errors(("nodeSelector",), profile.node_selector)
    if profile.plugins is not None:
        for point in EXTENSION_POINTS:
            errors += _point_errors(point, profile.plugins.get(point).names())
    seen: dict[str, int] = {}
    for j, pc in enumerate(profile.plugin_config):
        loc: Loc = ("pluginConfig", j)
        if pc.name in seen:
            errors.append(FieldError(loc + ("name",), f"duplicate value {pc.name!r} "
                                     f"(also pluginConfig[{seen[pc.name]}])"))
        seen.setdefault(pc.name, j)
        if pc.name not in PLUGIN_POINTS:
            errors.append(FieldError(loc + ("name",), f"unknown plugin {pc.name!r}"))
        if isinstance(pc.args, PluginArgs):
            errors += nest(loc + ("args",), pc.args.validate_args())
    return errors


def _point_errors(point: str, names: list[str]) -> list[FieldError]:
    """The framework's checks of the plugins enabled at ``point``."""
    loc: Loc = ("plugins", point, "enabled")
    errors = []
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name not in PLUGIN_POINTS:
            errors.append(FieldError(loc + (i, "name"), f"unknown plugin {name!r}"))
        elif point not in PLUGIN_POINTS[name]:
            errors.append(FieldError(loc + (i, "name"),
                                     f"{name} does not implement {INTERFACES[point]}"))
        if name in seen:
            errors.append(FieldError(loc + (i, "name"),
                                     f"plugin {name!r} already registered as {point!r}"))
        seen.add(name)
    if point == EVICT and not names:
        errors.append(FieldError(loc, "no evict plugin is enabled"))
    elif point == EVICT and len(names) > 1:
        errors.append(FieldError(loc, "only one evict plugin can be enabled"))
    return errors
