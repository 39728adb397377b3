"""Entry point of koord-scheduler (upstream ``cmd/koord-scheduler`` and kube-scheduler's
``cmd/kube-scheduler/app``).

Built as the py_binary ``//scheduler:koord-scheduler``. Reads a KubeSchedulerConfiguration
(``--config``), connects with ``--kubeconfig`` (or the file's ``clientConnection``), runs
leader election on the configured Lease, and once leading starts the informers and the
scheduling loop. ``/healthz``, ``/readyz``, ``/metrics`` and ``/debug/pods/<ns>/<name>`` (the
why-pending diagnosis) are served on ``--bind-address``:``--port`` over plain HTTP.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from typing import Any

from pkg.client.config import ClientOptions, ConfigError
from pkg.client.informers import SharedInformerFactory, wait_for_cache_sync
from pkg.client.rest import Client
from pkg.events.recorder import EventBroadcaster
from pkg.features import default_feature_gate
from pkg.leaderelection.config import (
    LeaderElectionConfiguration,
    add_leader_election_flags,
    config_from_args,
    new_leader_elector,
)
from pkg.log import log as klog
from pkg.server.server import Server, leader_election_check
from scheduler.apis.config import KubeSchedulerConfiguration, load_scheduler_config
from scheduler.apis.config.errors import SchedulerConfigError
from scheduler.factory import build_scheduler
from scheduler.framework.runtime import FrameworkError
from scheduler.metrics.metrics import SchedulerMetrics

PROG = "koord-scheduler"
log = logging.getLogger("koord-scheduler")

_DEFAULT_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  resourceName: koord-scheduler
  resourceNamespace: koordinator-system
profiles:
- schedulerName: koord-scheduler
"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
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
    # frameworkext flags (shared/upstream/scheduler.md 2.5): accepted for compatibility.
    p.add_argument("-s", "--debug-scores", type=int, default=0)
    p.add_argument("-f", "--debug-filters", nargs="?", const=True, default=False)
    p.add_argument("-d", "--debug-diagnosis", nargs="?", const=True, default=False)
    p.add_argument("--controller-plugins", default="*")
    add_leader_election_flags(p, LeaderElectionConfiguration(
        resource_name="koord-scheduler", resource_namespace="koordinator-system"))
    klog.add_flags(p)
    return p.parse_args(argv)


def load_config(args: argparse.Namespace) -> KubeSchedulerConfiguration:
    if args.config:
        return load_scheduler_config(args.config)
    return load_scheduler_config(_DEFAULT_CONFIG, source="(default configuration)")


def debug_pods_handler(sched: Any) -> Any:
    def handle(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        key = query.get("__subpath__", [""])[0]
        if not key:
            keys = sched.pending_diagnoses()
            return 200, "application/json", json.dumps({"pods": keys}).encode()
        entry = sched.diagnosis_of(key)
        if entry is None:
            return 404, "application/json", json.dumps(
                {"pod": key, "message": "no pending diagnosis"}).encode()
        return 200, "application/json", json.dumps(entry, indent=2).encode()
    return handle


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    klog.setup_from_args(args)
    try:
        if args.feature_gates:
            default_feature_gate.set(args.feature_gates)
        cfg = load_config(args)
    except (SchedulerConfigError, ValueError, OSError) as err:
        log.error("invalid configuration: %s", err)
        return 1
    if args.write_config_to:
        with open(args.write_config_to, "w", encoding="utf-8") as f:
            f.write(cfg.model_dump_json(by_alias=True, exclude_none=True, indent=2))
        return 0
    le = cfg.leader_election
    le_cfg = config_from_args(args, LeaderElectionConfiguration(
        leader_elect=le.leader_elect, lease_duration=le.lease_duration,
        renew_deadline=le.renew_deadline, retry_period=le.retry_period,
        resource_lock=le.resource_lock, resource_name=le.resource_name,
        resource_namespace=le.resource_namespace))
    cc = cfg.client_connection
    try:
        client = Client.from_options(ClientOptions(
            kubeconfig=args.kubeconfig or cc.kubeconfig or None, master=args.master or None,
            qps=cc.qps, burst=cc.burst, user_agent=PROG))
    except ConfigError as err:
        log.error("%s", err)
        return 1
    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    metrics = SchedulerMetrics()
    try:
        built = build_scheduler(cfg, client=client, informer_factory=factory,
                                recorder=broadcaster.new_recorder("koord-scheduler"),
                                metrics=metrics)
    except (FrameworkError, SchedulerConfigError) as err:
        log.error("%s", err)
        return 1
    sched = built.scheduler
    built.handlers.register(factory)
    server = Server(f"{args.bind_address}:{args.port}")
    server.add_handler("/debug/pods", debug_pods_handler(sched), subtree=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())

    def run(leading: threading.Event) -> None:
        factory.start()
        if not wait_for_cache_sync(*factory.informers().values(), stop=leading):
            return
        sched.queue.run(leading)
        log.info("koord-scheduler is scheduling (profiles: %s)", ", ".join(sched.profiles))
        sched.run(leading)

    server.start()
    log.info("serving /healthz, /readyz, /metrics and /debug/pods on %s", server.url)
    try:
        if le_cfg.leader_elect:
            lost = threading.Event()

            def stopped() -> None:
                if not stop.is_set():
                    lost.set()
                    stop.set()

            elector = new_leader_elector(client, le_cfg, run, stopped)
            server.add_healthz_check("leaderElection", leader_election_check(elector))
            elector.run(stop)
            if lost.is_set():
                log.error("leaderelection lost")
                return 1
        else:
            run(stop)
    finally:
        sched.stop()
        factory.shutdown()
        broadcaster.shutdown(timeout=2)
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
