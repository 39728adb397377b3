"""Entry point of koord-scheduler (upstream ``cmd/koord-scheduler`` and kube-scheduler's
``cmd/kube-scheduler/app``): its flags and its build function; it starts and stops through the
component runner (``pkg.component``).

Built as the py_binary ``//scheduler:koord-scheduler``. Reads a KubeSchedulerConfiguration
(``--config``), connects with ``--kubeconfig`` (or the file's ``clientConnection``), runs
leader election on the configured Lease, and once leading starts the informers and the
scheduling loop. ``/healthz``, ``/readyz``, ``/metrics`` and ``/debug/pods/<ns>/<name>`` (the
why-pending diagnosis) are served on ``--bind-address``:``--port`` over plain HTTP.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading

from pkg.client.informers import SharedInformerFactory, wait_for_cache_sync
from pkg.client.rest import Client
from pkg.component import Component, Hooks, Runner, run
from pkg.events.events import EventBroadcaster
from pkg.features import default_feature_gate
from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
)
from pkg.log import log as klog
from pkg.util import flags
from scheduler.apis.config import KubeSchedulerConfiguration, load_scheduler_config
from scheduler.diagnosis import debug_pods_handler
from scheduler.factory import build_scheduler
from scheduler.metrics.metrics import SchedulerMetrics

PROG = "koord-scheduler"
log = logging.getLogger(PROG)

_DEFAULT_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  resourceName: koord-scheduler
  resourceNamespace: koordinator-system
profiles:
- schedulerName: koord-scheduler
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="koord-scheduler: the kube-scheduler framework with "
                               "Koordinator's plugins (LoadAwareScheduling, ...).")
    p.add_argument("--config", default="", help="The path to the configuration file.")
    p.add_argument("--kubeconfig", default="", help="path to kubeconfig file with "
                   "authorization and master location information (overrides the config "
                   "file's clientConnection.kubeconfig)")
    p.add_argument("--master", default="", help="The address of the Kubernetes API server "
                   "(overrides any value in kubeconfig)")
    p.add_argument("--bind-address", default="0.0.0.0",
                   help="The IP address on which to serve /healthz, /metrics and /debug.")
    p.add_argument("--port", type=int, default=10251,
                   help="The port on which to serve /healthz, /readyz, /metrics and "
                        "/debug/pods (plain HTTP; 0 picks a free port).")
    p.add_argument("--feature-gates", default="",
                   help="A set of key=value pairs that describe feature gates.")
    p.add_argument("--write-config-to", default="",
                   help="If set, write the effective configuration to this file and exit.")
    # frameworkext flags: accepted for compatibility.
    p.add_argument("-s", "--debug-scores", type=int, default=0)
    p.add_argument("-f", "--debug-filters", nargs="?", const=True, default=False)
    p.add_argument("-d", "--debug-diagnosis", nargs="?", const=True, default=False)
    p.add_argument("--controller-plugins", default="*")
    # Upstream's chart passes these two: accepted so its Deployment runs unchanged. This
    # scheduler serves /healthz and /metrics without delegated authentication (nothing to look
    # up), and has no network-topology manager yet (Coscheduling's awareNetworkTopology).
    flags.add_bool(p, "--authentication-skip-lookup", False,
                   "kube-scheduler's: skip looking up the authentication configuration")
    flags.add_bool(p, "--enable-network-topology-manager", False,
                   "enable the network topology manager (accepted; not implemented yet)")
    p.add_argument("--plugin-module", action="append", default=[], metavar="MODULE",
                   help="Import out-of-tree scheduler plugins from MODULE at start-up: a file "
                        "(/path/to/plugin.py) or a dotted module name; its PLUGINS lists the "
                        "plugin classes. Repeatable, or comma-separated.")
    p.add_argument("--plugin-path", action="append", default=[], metavar="DIR",
                   help="Put DIR first on the import path of --plugin-module. Repeatable, "
                        "or comma-separated.")
    add_leader_election_flags(p, LeaderElectionConfiguration(
        resource_name="koord-scheduler", resource_namespace="koordinator-system"))
    klog.add_flags(p)
    return p


def load_config(args: argparse.Namespace) -> KubeSchedulerConfiguration:
    if args.config:
        return load_scheduler_config(args.config)
    return load_scheduler_config(_DEFAULT_CONFIG, source="(default configuration)")


def build(args: argparse.Namespace, runner: Runner) -> None:
    if args.feature_gates:
        default_feature_gate.set(args.feature_gates)
    cfg = load_config(args)
    if args.write_config_to:
        with open(args.write_config_to, "w", encoding="utf-8") as f:
            f.write(cfg.model_dump_json(by_alias=True, exclude_none=True, indent=2))
        sys.exit(0)
    runner.leader_election(config_from_args(args, cfg.leader_election.runtime()))
    options = cfg.client_connection.client_options(PROG, args.kubeconfig, args.master)
    client = runner.connect(options)
    factory = SharedInformerFactory(client)
    # Events go through a client of their own, as kube-scheduler's eventClient: a burst of
    # events must not use up the rate limit that bindings and status updates need.
    events = EventBroadcaster(Client.from_options(options))
    built = build_scheduler(cfg, client=client, informer_factory=factory,
                            recorder_factory=events.new_recorder, metrics=SchedulerMetrics(),
                            plugin_modules=args.plugin_module, plugin_path=args.plugin_path)
    built.handlers.register(factory)
    server = runner.serve(f"{args.bind_address}:{args.port}")
    server.add_handler("/debug/pods", debug_pods_handler(built.scheduler), subtree=True)
    runner.add("events", Hooks(on_stop=lambda: events.shutdown(timeout=2)))
    sched = built.scheduler

    def schedule(stop: threading.Event) -> None:
        # Never on partial caches: the runner gives up waiting for them after a while.
        if not wait_for_cache_sync(*factory.informers().values(), stop=stop):
            return
        sched.queue.run(stop)
        log.info("koord-scheduler is scheduling (profiles: %s)", ", ".join(sched.profiles))
        try:
            sched.run(stop)
        finally:
            sched.stop()

    runner.informers(factory, leader=True)
    runner.task("scheduler", schedule, leader=True)


COMPONENT = Component(PROG, build_parser, build)


def main(argv: list[str] | None = None) -> int:
    return run(COMPONENT, argv)


if __name__ == "__main__":
    sys.exit(main())
