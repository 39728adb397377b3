"""Entry point of koord-manager (upstream ``cmd/koord-manager``): its flags and its build
function; it starts and stops through the component runner (``pkg.component``).

Built as the py_binary ``//manager:koord-manager``. As upstream: connect with
``--rest-config-qps``/``--rest-config-burst`` as user agent ``koordinator-manager``, serve
metrics on ``--metrics-addr`` (also ``/internal-metrics``, ``/external-metrics``,
``/all-metrics``) and ``/healthz``/``/readyz`` on ``--health-probe-addr``, and run leader
election on the Lease ``<--leader-election-namespace>/koordinator-manager``. Every replica
serves the admission webhooks; only the leader runs the controllers ``--controllers`` enables
(``manager.controllers``) and, with WEBHOOK_HOST, writes the webhook configurations (its
URL). Losing the lease exits with status 1, as controller-runtime does, so the replica restarts
as a standby.

Flags keep upstream's names and defaults. Ours only: ``--kubeconfig``/``--master`` (which
controller-runtime registers implicitly), ``--leader-elect-lease-duration``,
``--leader-elect-renew-deadline``, ``--leader-elect-retry-period`` (controller-runtime's fixed
15s / 10s / 2s by default), so tests and small clusters can fail over faster, and
``--webhook-bind-address`` (upstream's webhook server Host, set in code: "" listens on every
interface), so a manager outside a cluster can serve on loopback only.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from api.configuration import CONFIG_NAMESPACE, SLO_CTRL_CONFIG_MAP
from api.meta import parse_duration
from manager.controllers import ALL_NAMES, Context, Controllers, enabled_controllers
from manager.slo_controller.noderesource.plugins import ALL_PLUGIN_NAMES
from manager.webhook import WebhookOptions, WebhookServer, split_list
from manager.webhook.checker import webhook_ready_check
from pkg import log as klog
from pkg.client.config import ClientOptions
from pkg.client.informers import SharedInformerFactory
from pkg.component import Component, Hooks, Runner, run
from pkg.events.recorder import EventBroadcaster
from pkg.features import default_feature_gate
from pkg.features.features import WEBHOOK_FRAMEWORK
from pkg.leaderelection.config import LeaderElectionConfiguration
from pkg.leaderelection.resourcelock import LEASES_LOCK
from pkg.util import flags

PROG = "koord-manager"
USER_AGENT = "koordinator-manager"
LEADER_ELECTION_ID = "koordinator-manager"
# controller-runtime's cache resync when --sync-period is not given.
DEFAULT_SYNC_PERIOD = 10 * 3600.0

log = logging.getLogger(PROG)


def _add_webhook_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of the webhooks (the pod enhanced validator, binding admission and the quota
    admission evaluator)."""
    p = parser.add_argument_group("webhooks (listen port and certificates: WEBHOOK_* env)")
    p.add_argument("--webhook-bind-address", default="", metavar="ADDRESS",
                   help="The address the webhook server listens on; empty listens on every "
                        "interface (controller-runtime's webhook Server Host).")
    p.add_argument("--pod-enhanced-validator-config-namespace", default="koordinator-system",
                   help="Namespace of the pod enhanced validator ConfigMap.")
    p.add_argument("--pod-enhanced-validator-config-name",
                   default="pod-enhanced-validator-config",
                   help="Name of the pod enhanced validator ConfigMap.")
    p.add_argument("--pod-enhanced-validator-reconcile-interval", type=flags.duration,
                   default=300.0, metavar="DURATION",
                   help="How often the pod enhanced validator re-reads its ConfigMap "
                        "(default 5m0s)")
    p.add_argument("--quota-update-max-retries", type=int, default=3,
                   help="How often the quota admission evaluator retries a conflicting "
                        "quota status update.")
    p.add_argument("--quota-update-retry-jitter", type=flags.duration, default=0.0,
                   metavar="DURATION",
                   help="Random delay before each quota update retry; 0 disables it.")
    p.add_argument("--quota-update-max-total-jitter", type=flags.duration, default=1.0,
                   metavar="DURATION",
                   help="Bound on the cumulative retry jitter of one batch (default 1s)")
    flags.add_bool(p, "--quota-update-conflict-fresh-get", False,
               "Read the quota from the API server, not the cache, after a conflict.")
    p.add_argument("--binding-admission-user-name", default="",
                   help="Comma-separated substrings of the user names allowed to bind pods; "
                        "empty disables the check.")
    flags.add_bool(p, "--binding-admission-dry-run", False,
               "Only log what binding admission would refuse.")
    p.add_argument("--binding-admission-namespaces", default="",
                   help="Comma-separated namespaces binding admission enforces ('*' = all; "
                        "empty = none).")
    p.add_argument("--binding-admission-exclude-namespaces", default="kube-system",
                   help="Comma-separated namespaces binding admission never enforces.")
    p.add_argument("--binding-admission-bypass-labels",
                   default="koordinator.sh/binding-admission-bypass",
                   help="Comma-separated pod label keys whose presence bypasses binding "
                        "admission.")
    p.add_argument("--binding-admission-bypass-annotations", default="",
                   help="Comma-separated pod annotation keys whose presence bypasses binding "
                        "admission.")


def _add_colocation_profile_flags(parser: argparse.ArgumentParser) -> None:
    """Flags of upstream's ``colocationprofile`` controller (off by default behind the gate
    ColocationProfileController, and not implemented here: accepted, not used)."""
    p = parser.add_argument_group("colocationprofile controller (not implemented)")
    flags.add_bool(p, "--colocation-profile-reconcile-by-default", False,
               "Reconcile every ClusterColocationProfile, not only the labelled ones.")
    for flag, default, text in (
            ("--colocation-profile-reconcile-interval", 30.0, "30s"),
            ("--colocation-profile-force-update-pod-duration", 300.0, "5m0s"),
            ("--colocation-profile-expire-pod-cache-duration", 600.0, "10m0s")):
        p.add_argument(flag, type=flags.duration, default=default, metavar="DURATION",
                       help=f"(default {text})")
    p.add_argument("--colocation-profile-update-pod-qps", type=float, default=10)
    p.add_argument("--colocation-profile-update-pod-qps-burst", type=int, default=100)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="koord-manager: the slo-controller (NodeMetric, NodeSLO, "
                               "batch/mid resources of nodes), the quota profile controller "
                               "and Koordinator's admission webhooks.")
    p.add_argument("--kubeconfig", default="",
                   help="Paths to a kubeconfig. Only required if out-of-cluster.")
    p.add_argument("--master", default="",
                   help="The address of the Kubernetes API server. Overrides any value in "
                        "kubeconfig. Only required if out-of-cluster.")
    p.add_argument("--metrics-addr", default=":8080",
                   help="The address the metric endpoint binds to.")
    p.add_argument("--health-probe-addr", default=":8000",
                   help="The address the healthz/readyz endpoint binds to.")
    flags.add_bool(p, "--enable-leader-election", True,
               "Whether you need to enable leader election.")
    p.add_argument("--leader-election-namespace", default="koordinator-system",
                   help="This determines the namespace in which the leader election "
                        "resource will be created.")
    p.add_argument("--leader-elect-resource-lock", default=LEASES_LOCK,
                   help="The leader election resource lock for controller manager. Supported "
                        "options are 'leases'.")
    p.add_argument("--leader-elect-lease-duration", type=flags.duration, default=15.0,
                   metavar="DURATION",
                   help="How long a standby waits after the last observed renewal before it "
                        "takes the lease (default 15s)")
    p.add_argument("--leader-elect-renew-deadline", type=flags.duration, default=10.0,
                   metavar="DURATION",
                   help="How long the leader keeps retrying to renew before it gives up "
                        "(default 10s)")
    p.add_argument("--leader-elect-retry-period", type=flags.duration, default=2.0,
                   metavar="DURATION",
                   help="The interval between renewals and acquisition attempts (default 2s)")
    p.add_argument("--namespace", default="",
                   help="Namespace if specified restricts the manager's cache to watch "
                        "objects in the desired namespace. Defaults to all namespaces.")
    flags.add_bool(p, "--enable-pprof", True,
               "Enable pprof for controller manager (accepted for compatibility: Python has "
               "no pprof, nothing is served).")
    p.add_argument("--pprof-addr", default=":8090", help="The address the pprof binds to.")
    p.add_argument("--sync-period", default="",
                   help="Determines the minimum frequency at which watched resources are "
                        "reconciled.")
    p.add_argument("--rest-config-qps", type=float, default=30,
                   help="QPS of rest config.")
    p.add_argument("--rest-config-burst", type=int, default=50,
                   help="Burst of rest config.")
    p.add_argument("--controllers", type=flags.string_slice, default=list(ALL_NAMES),
                   metavar="STRINGS",
                   help="A list of controllers to enable. '*' enables all on-by-default "
                        "controllers, 'foo' enables the controller named 'foo', '-foo' "
                        f"disables the controller named 'foo'. All controllers: "
                        f"{', '.join(ALL_NAMES)}")
    p.add_argument("--noderesource-plugins", type=flags.string_slice,
                   default=list(ALL_PLUGIN_NAMES), metavar="STRINGS",
                   help="A list of noderesource plugins to enable, with the grammar of "
                        f"--controllers. All plugins: {', '.join(ALL_PLUGIN_NAMES)}")
    p.add_argument("--slo-config-name", default=SLO_CTRL_CONFIG_MAP,
                   help="determines the name the slo-controller configmap uses.")
    p.add_argument("--config-namespace", default=CONFIG_NAMESPACE,
                   help="determines the namespace of configmap uses.")
    p.add_argument("--node-strategy-name-need-check", default="false",
                   help='"true" makes the ConfigMap webhook require a unique, non-empty name '
                        "in every node strategy.")
    flags.add_bool(p, "--disable-no-deepcopy", False,
               "Accepted for compatibility (a client-cache option of the Go manager).")
    _add_webhook_flags(p)
    _add_colocation_profile_flags(p)
    default_feature_gate.add_flag(p)
    klog.add_flags(p)
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def sync_period(value: str) -> float:
    """The informers' resync period: upstream ignores an unparsable ``--sync-period``."""
    if not value:
        return DEFAULT_SYNC_PERIOD
    try:
        return max(0.0, parse_duration(value))
    except ValueError:
        log.error("invalid --sync-period %r, using the default", value)
        return DEFAULT_SYNC_PERIOD


def webhook_options(args: argparse.Namespace) -> WebhookOptions:
    """The webhook server's settings: WEBHOOK_* and friends from the environment, the rest
    from the flags (raises ValueError for a non-integer WEBHOOK_PORT)."""
    return WebhookOptions.from_env(
        bind_address=args.webhook_bind_address, slo_config_name=args.slo_config_name,
        config_namespace=args.config_namespace,
        node_strategy_name_need_check=args.node_strategy_name_need_check == "true",
        binding_user_names=split_list(args.binding_admission_user_name),
        binding_dry_run=args.binding_admission_dry_run,
        binding_namespaces=split_list(args.binding_admission_namespaces),
        binding_exclude_namespaces=split_list(args.binding_admission_exclude_namespaces),
        binding_bypass_labels=split_list(args.binding_admission_bypass_labels),
        binding_bypass_annotations=split_list(args.binding_admission_bypass_annotations))


def build(args: argparse.Namespace, runner: Runner) -> None:
    runner.leader_election(LeaderElectionConfiguration(
        leader_elect=args.enable_leader_election,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        resource_lock=args.leader_elect_resource_lock,
        resource_name=LEADER_ELECTION_ID,
        resource_namespace=args.leader_election_namespace))
    client = runner.connect(ClientOptions(
        kubeconfig=args.kubeconfig or None, master=args.master or None,
        qps=args.rest_config_qps, burst=args.rest_config_burst, user_agent=USER_AGENT))
    metrics = runner.serve(args.metrics_addr, name="metrics-server", health=False)
    for path in ("/internal-metrics", "/external-metrics", "/all-metrics"):
        metrics.add_metrics_path(path, metrics.registry)
    probes = runner.serve(args.health_probe_addr, name="probe-server", metrics=False)
    if default_feature_gate.enabled(WEBHOOK_FRAMEWORK):
        webhook = WebhookServer(client, webhook_options(args), default_feature_gate)
        runner.add("webhook", webhook)
        if webhook.leader_writes_configurations:
            # URL mode: the configurations name one replica, the leader (registered before the
            # leader-bound informers, so it writes the moment it leads).
            runner.task("webhook-configurations", webhook.keep_configurations, leader=True)
        probes.add_readyz_check("webhook-ready", webhook_ready_check(webhook))
    events = EventBroadcaster(client)
    runner.add("events", Hooks(on_stop=lambda: events.shutdown(timeout=2)))
    factory = SharedInformerFactory(
        client, resync_period=sync_period(args.sync_period), namespace=args.namespace or None)
    controllers = Controllers(Context(
        client, factory, events, config_namespace=args.config_namespace,
        slo_config_name=args.slo_config_name,
        noderesource_plugins=args.noderesource_plugins), enabled_controllers(args.controllers))
    runner.informers(factory, leader=True)
    runner.add("controllers", controllers, leader=True)


COMPONENT = Component(PROG, build_parser, build)


def main(argv: Sequence[str] | None = None) -> int:
    return run(COMPONENT, argv)


if __name__ == "__main__":
    sys.exit(main())
