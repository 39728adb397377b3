"""Entry point of koord-descheduler (upstream ``cmd/koord-descheduler/app``): its flags and its
build function; it starts and stops through the component runner (``pkg.component``).

Built as the py_binary ``//descheduler:koord-descheduler``. Reads the DeschedulerConfiguration
(``--config``; strict: an unknown plugin, bad args or an unknown field stop start-up naming the
file and the field), connects with ``--kubeconfig`` (or the file's ``clientConnection``), runs
leader election on the Lease ``koordinator-system/koord-descheduler`` (the file's
``leaderElection``; a flag given on the command line wins), serves ``/healthz``, ``/readyz``
and ``/metrics`` on ``healthzBindAddress`` (``metricsBindAddress`` too when it differs) over
plain HTTP, and once leading starts the node, pod and NodeMetric informers, the plugins that
run controllers of their own (the MigrationController) and the descheduling loop.

Without ``--config`` the insecure ``--address``/``--port`` (deprecated upstream, ignored with a
file) give the serving address. ``--secure-port`` is accepted for compatibility and not served:
there is no HTTPS serving here.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from descheduler.apis.config import DeschedulerConfiguration, load_descheduler_config
from descheduler.descheduler import Descheduler
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.runtime import Listers
from descheduler.framework.types import Runnable, Services
from pkg import log as klog
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import NODE_METRICS, NODES, PODS
from pkg.component import Component, Hooks, Runner, run
from pkg.events.recorder import EventBroadcaster
from pkg.features import default_feature_gate
from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
)
from pkg.util.clock import REAL_CLOCK

PROG = "koord-descheduler"
log = logging.getLogger(PROG)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="koord-descheduler: the descheduling framework, LowNodeLoad "
                               "and the MigrationController (PodMigrationJobs).")
    p.add_argument("--config", default="", metavar="FILE",
                   help="The DeschedulerConfiguration file (strict: unknown and duplicate "
                        "fields are errors).")
    p.add_argument("--write-config-to", default="", metavar="FILE",
                   help="If set, write the effective configuration to this file and exit.")
    p.add_argument("--kubeconfig", default="",
                   help="path to kubeconfig file with authorization and master location "
                        "information (overrides the config file's clientConnection.kubeconfig)")
    p.add_argument("--master", default="",
                   help="The address of the Kubernetes API server (overrides any value in "
                        "kubeconfig)")
    p.add_argument("--secure-port", type=int, default=10258,
                   help="Accepted for compatibility; HTTPS serving is not implemented.")
    p.add_argument("--address", default="0.0.0.0",
                   help="DEPRECATED: the address for /healthz and /metrics without --config "
                        "(ignored with a config file).")
    p.add_argument("--port", type=int, default=10251,
                   help="DEPRECATED: the port for /healthz and /metrics without --config "
                        "(ignored with a config file; 0 picks a free port).")
    p.add_argument("--feature-gates", default="",
                   help="A set of key=value pairs that describe feature gates.")
    add_leader_election_flags(p, LeaderElectionConfiguration(
        resource_name="koord-descheduler", resource_namespace="koordinator-system"))
    klog.add_flags(p)
    return p


def load_config(args: argparse.Namespace) -> DeschedulerConfiguration:
    """The effective configuration; without ``--config`` the defaults, serving on the
    deprecated ``--address``/``--port``."""
    if args.config:
        try:
            text = Path(args.config).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            reason = err.strerror if isinstance(err, OSError) else str(err)
            raise ValueError(f"{args.config}: cannot read the file: {reason}") from None
        return load_descheduler_config(text, source=args.config)
    address = f"{args.address}:{args.port}"
    return load_descheduler_config(
        f"apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"
        f"healthzBindAddress: {address!r}\nmetricsBindAddress: {address!r}\n",
        source="(default configuration)")


def build(args: argparse.Namespace, runner: Runner) -> None:
    if args.feature_gates:
        default_feature_gate.set(args.feature_gates)
    cfg = load_config(args)
    if args.write_config_to:
        Path(args.write_config_to).write_text(
            cfg.model_dump_json(by_alias=True, exclude_none=True, indent=2), encoding="utf-8")
        sys.exit(0)
    runner.leader_election(config_from_args(args, cfg.leader_election.runtime()))
    options = cfg.client_connection.client_options(PROG, args.kubeconfig, args.master)
    client = runner.connect(options)
    healthz = cfg.healthz_bind_address or ""
    runner.serve(healthz, metrics=cfg.metrics_bind_address in (None, healthz))
    if cfg.metrics_bind_address not in (None, healthz):
        runner.serve(cfg.metrics_bind_address or "", name="metrics", health=False)
    factory = SharedInformerFactory(client)
    events = EventBroadcaster(client)
    services = Services(kube_client=client, informer_factory=factory,
                        event_recorder=events.new_recorder(PROG), clock=REAL_CLOCK)
    listers = Listers(nodes=factory.informer_for(NODES, typed=False).lister,
                      pods=factory.informer_for(PODS, typed=False).lister,
                      node_metrics=factory.informer_for(NODE_METRICS, typed=False).lister)
    descheduler = Descheduler(cfg, in_tree_registry(), listers, client, services=services)
    runner.add("events", Hooks(on_stop=lambda: events.shutdown(timeout=2)))
    runner.informers(factory, leader=True)
    for plugin in descheduler.plugins():
        if isinstance(plugin, Runnable):
            runner.add(type(plugin).__name__, plugin, leader=True)
    runner.task("descheduler", descheduler.run, leader=True)


COMPONENT = Component(PROG, build_parser, build, setup_error=PROG)


def main(argv: list[str] | None = None) -> int:
    return run(COMPONENT, argv)


if __name__ == "__main__":
    sys.exit(main())
