"""Leader election on ``coordination.k8s.io/v1`` Leases (client-go
``tools/leaderelection`` and component-base's leader-election flags). Components do not call
it directly: ``pkg.component``'s ``Runner.leader_election`` runs it for them. By hand:

    parser = argparse.ArgumentParser()
    add_leader_election_flags(parser, DEFAULTS)
    config = config_from_args(parser.parse_args(), DEFAULTS)
    elector = new_leader_elector(client, config, run_controllers, exit_process)
    elector.run(stop)
"""

from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
    new_leader_elector,
)
from pkg.leaderelection.leaderelection import LeaderCallbacks, LeaderElector, default_identity
from pkg.leaderelection.resourcelock import LeaderElectionRecord, LeaseLock, ResourceLock

__all__ = [
    "LeaderCallbacks",
    "LeaderElectionConfiguration",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseLock",
    "ResourceLock",
    "add_leader_election_flags",
    "config_from_args",
    "default_identity",
    "new_leader_elector",
]
