"""Leader election settings and their command-line flags.

Corresponds to component-base ``config.LeaderElectionConfiguration`` and
``config/options.BindLeaderElectionFlags``, with the flag names, defaults and help texts
koord-scheduler and koord-descheduler inherit from kube-scheduler:

=====================================  ========================================
``--leader-elect``                     true
``--leader-elect-lease-duration``      15s
``--leader-elect-renew-deadline``      10s
``--leader-elect-retry-period``        2s
``--leader-elect-resource-lock``       leases
``--leader-elect-resource-name``       the component (``koord-scheduler``, ...)
``--leader-elect-resource-namespace``  ``koordinator-system`` for Koordinator
=====================================  ========================================

Flags parse with Go's syntax (``--leader-elect=false``, durations like ``15s``). A flag left
off the command line keeps the value of the configuration passed to ``config_from_args``
(for the descheduler, the one from its ``--config`` file), as upstream.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from api.meta import format_duration
from pkg.client.rest import Client
from pkg.leaderelection.leaderelection import LeaderCallbacks, LeaderElector, default_identity
from pkg.leaderelection.resourcelock import LEASES_LOCK, LeaseLock
from pkg.util import flags
from pkg.util.clock import REAL_CLOCK, Clock


@dataclass(frozen=True)
class LeaderElectionConfiguration:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = LEASES_LOCK
    resource_name: str = ""
    resource_namespace: str = "kube-system"

    def validate(self) -> list[str]:
        """Problems, as component-base's validation words them (empty when valid)."""
        if not self.leader_elect:
            return []
        errs = []
        if self.lease_duration <= 0:
            errs.append("leaderElection.leaseDuration: must be greater than zero")
        if self.renew_deadline <= 0:
            errs.append("leaderElection.renewDeadline: must be greater than zero")
        if self.retry_period <= 0:
            errs.append("leaderElection.retryPeriod: must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            errs.append("leaderElection.leaseDuration: must be greater than renewDeadline")
        if self.resource_lock != LEASES_LOCK:
            errs.append(f"leaderElection.resourceLock: {self.resource_lock!r}: only "
                        f"{LEASES_LOCK!r} is supported")
        if not self.resource_name:
            errs.append("leaderElection.resourceName: Required value")
        if not self.resource_namespace:
            errs.append("leaderElection.resourceNamespace: Required value")
        return errs


_DEST = "leader_election_"


def add_leader_election_flags(parser: argparse.ArgumentParser | Any,
                              defaults: LeaderElectionConfiguration) -> None:
    """The ``--leader-elect*`` flags; help shows ``defaults``. Unset flags parse to None."""
    d = defaults
    parser.add_argument(
        "--leader-elect", dest=_DEST + "leader_elect", nargs="?", const=True,
        type=flags.go_bool, default=None, metavar="BOOL",
        help="Start a leader election client and gain leadership before executing the main "
             "loop. Enable this when running replicated components for high availability. "
             f"(default {str(d.leader_elect).lower()})")
    parser.add_argument(
        "--leader-elect-lease-duration", dest=_DEST + "lease_duration", type=flags.duration,
        default=None, metavar="DURATION",
        help="The duration that non-leader candidates will wait after observing a leadership "
             "renewal until attempting to acquire leadership of a led but unrenewed leader "
             "slot. This is effectively the maximum duration that a leader can be stopped "
             "before it is replaced by another candidate. This is only applicable if leader "
             f"election is enabled. (default {format_duration(d.lease_duration)})")
    parser.add_argument(
        "--leader-elect-renew-deadline", dest=_DEST + "renew_deadline", type=flags.duration,
        default=None, metavar="DURATION",
        help="The interval between attempts by the acting master to renew a leadership slot "
             "before it stops leading. This must be less than the lease duration. This is only "
             f"applicable if leader election is enabled. (default "
             f"{format_duration(d.renew_deadline)})")
    parser.add_argument(
        "--leader-elect-retry-period", dest=_DEST + "retry_period", type=flags.duration,
        default=None, metavar="DURATION",
        help="The duration the clients should wait between attempting acquisition and renewal "
             "of a leadership. This is only applicable if leader election is enabled. "
             f"(default {format_duration(d.retry_period)})")
    parser.add_argument(
        "--leader-elect-resource-lock", dest=_DEST + "resource_lock", default=None,
        metavar="STRING",
        help="The type of resource object that is used for locking during leader election. "
             f"Supported options are 'leases'. (default \"{d.resource_lock}\")")
    parser.add_argument(
        "--leader-elect-resource-name", dest=_DEST + "resource_name", default=None,
        metavar="STRING",
        help="The name of resource object that is used for locking during leader election. "
             f"(default \"{d.resource_name}\")")
    parser.add_argument(
        "--leader-elect-resource-namespace", dest=_DEST + "resource_namespace", default=None,
        metavar="STRING",
        help="The namespace of resource object that is used for locking during leader "
             f"election. (default \"{d.resource_namespace}\")")


def config_from_args(args: argparse.Namespace, base: LeaderElectionConfiguration
                     ) -> LeaderElectionConfiguration:
    """``base`` with every flag given on the command line applied."""
    changes: dict[str, Any] = {}
    ns = vars(args)
    for f in fields(LeaderElectionConfiguration):
        value = ns.get(_DEST + f.name)
        if value is not None:
            changes[f.name] = value
    return replace(base, **changes)


def new_leader_elector(client: Client, config: LeaderElectionConfiguration,
                       on_started_leading: Callable[[threading.Event], None],
                       on_stopped_leading: Callable[[], None],
                       on_new_leader: Callable[[str], None] | None = None, *,
                       identity: str | None = None, release_on_cancel: bool = True,
                       clock: Clock = REAL_CLOCK) -> LeaderElector:
    """An elector on a Lease as ``config`` describes (raises ValueError when invalid)."""
    errs = config.validate()
    if errs:
        raise ValueError("; ".join(errs))
    lock = LeaseLock(client, config.resource_namespace, config.resource_name,
                     identity or default_identity(),
                     timeout=max(1.0, config.renew_deadline / 2))
    return LeaderElector(lock, LeaderCallbacks(on_started_leading, on_stopped_leading,
                                               on_new_leader),
                         lease_duration=config.lease_duration,
                         renew_deadline=config.renew_deadline,
                         retry_period=config.retry_period,
                         release_on_cancel=release_on_cancel,
                         name=f"{config.resource_namespace}/{config.resource_name}",
                         clock=clock)


__all__ = [
    "LeaderElectionConfiguration", "add_leader_election_flags", "config_from_args",
    "new_leader_elector",
]
