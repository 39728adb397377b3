"""Entry point of koordlet (upstream ``cmd/koordlet``): its flags and its build function; it
starts and stops through the component runner (``pkg.component``), and its modules are wired
by ``koordlet.koordlet.Daemon``.

Built as the py_binary ``//koordlet:koordlet``. As upstream, ``NODE_NAME`` must be set and the
kube client uses user agent ``koordlet`` with ``--kube-api-qps``/``--kube-api-burst``;
``agent_mode=hostMode`` switches the path defaults to the host's. ``--simulate-metrics`` and
``--pod-source`` are ours (see ``koordlet.koordlet``).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence

from koordlet.audit.auditor import Config as AuditConfig
from koordlet.koordlet import POD_SOURCE_APISERVER, POD_SOURCE_KUBELET, Daemon
from koordlet.metricsadvisor.cpi import DEFAULT_INTERVAL_SECONDS, DEFAULT_TIME_WINDOW_SECONDS
from koordlet.qosmanager import framework as qos
from koordlet.resourceexecutor.executor import DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS
from koordlet.statesinformer.kubelet_pods import ADDRESS_TYPES, DEFAULT_ADDRESS_TYPE
from koordlet.util.system.config import Config
from pkg import log as klog
from pkg.client.config import ClientOptions, add_client_flags
from pkg.component import Component, Runner, run
from pkg.features import koordlet_feature_gate
from pkg.util import flags

PROG = "koordlet"
USER_AGENT = "koordlet"
HOST_MODE = "hostMode"
# Not flags upstream: the hook config dir is the default of --runtime-hooks-config-path.
DS_MODE_HOOK_CONFIG_DIR = "/host-etc-hookserver/"
HOST_MODE_HOOK_CONFIG_DIR = "/etc/runtime/hookserver.d"


def _add_runtime_hooks_flags(p: argparse._ActionsContainer, host_mode: bool) -> None:
    """Upstream ``pkg/koordlet/runtimehooks/config.go``; the NRI flags are accepted, NRI mode
    itself is not implemented."""
    p.add_argument("--runtime-hooks-network", default="unix", choices=("unix",),
                   help="rpc server network type for runtime hooks")
    p.add_argument("--runtime-hooks-addr", default="/host-var-run-koordlet/koordlet.sock",
                   help="rpc server address for runtime hooks")
    p.add_argument("--runtime-hooks-host-endpoint", default="/var/run/koordlet/koordlet.sock",
                   help="host endpoint of runtime proxy")
    p.add_argument("--runtime-hooks-failure-policy", default="Ignore",
                   help="failure policy for runtime hooks (Fail or Ignore)")
    p.add_argument("--runtime-hooks-plugin-failure-policy", default="Ignore",
                   help="stop running other hooks once someone failed (Fail or Ignore)")
    p.add_argument("--runtime-hooks-config-path",
                   default=HOST_MODE_HOOK_CONFIG_DIR if host_mode else DS_MODE_HOOK_CONFIG_DIR,
                   help="config file path for runtime hooks")
    p.add_argument("--runtime-hooks-disable-stages", type=flags.string_slice, default=[],
                   help="disable stages for runtime hooks")
    flags.add_bool(p, "--enable-nri-runtime-hook", True, "enable/disable nri runtime hook")
    p.add_argument("--runtime-hooks-nri-connect-timeout", type=flags.duration, default=6.0)
    p.add_argument("--runtime-hooks-nri-backoff-duration", type=flags.duration, default=1.0)
    p.add_argument("--runtime-hooks-nri-backoff-cap", type=flags.duration,
                   default=4611686018427387903 / 1e9)
    p.add_argument("--runtime-hooks-nri-backoff-steps", type=int, default=2147483647)
    p.add_argument("--runtime-hooks-nri-backoff-factor", type=float, default=2.0)
    p.add_argument("--runtime-hooks-nri-socket-path", default="nri/nri.sock")
    p.add_argument("--runtime-hooks-nri-plugin-name", default="koordlet_nri")
    p.add_argument("--runtime-hooks-nri-plugin-index", default="00")
    p.add_argument("--runtime-hooks-reconcile-interval", type=flags.duration, default=10.0,
                   help="reconcile interval for each plugins (default 10s)")
    flags.add_bool(p, "--disable-unset-cpu-quota", False,
               "stop the cpuset hook from unsetting the quota of cpuset pods")


def _add_states_informer_flags(p: argparse._ActionsContainer) -> None:
    """Upstream ``pkg/koordlet/statesinformer/config.go``; the task-id flag is accepted and not
    acted on, and kubelet's ``/configz`` is read only with ``--pod-source=kubelet``."""
    p.add_argument("--kubelet-preferred-address-type", default=DEFAULT_ADDRESS_TYPE,
                   help=f"node address type used to reach kubelet ({', '.join(ADDRESS_TYPES)})")
    p.add_argument("--kubelet-sync-interval", type=flags.duration, default=10.0,
                   help="pod list refresh from kubelet (default 10s); <=0 disables it")
    p.add_argument("--kubelet-sync-timeout", type=flags.duration, default=3.0,
                   help="timeout of each kubelet request (default 3s)")
    flags.add_bool(p, "--kubelet-insecure-tls", False,
               "reach kubelet over plain HTTP on --kubelet-read-only-port")
    p.add_argument("--kubelet-read-only-port", type=int, default=10255)
    p.add_argument("--node-topology-sync-interval", type=flags.duration, default=3.0,
                   help="NodeResourceTopology report interval (default 3s); <=0 disables it")
    flags.add_bool(p, "--disable-query-kubelet-config", False,
                   "skip kubelet /configz: its CPU manager and topology settings stay out of "
                   "the NodeResourceTopology")
    p.add_argument("--report-interval", type=flags.duration, default=0.0,
                   help="deprecated, ignored")
    flags.add_bool(p, "--enable-node-metric-report", True, "update NodeMetric status")
    flags.add_bool(p, "--enable-pod-taskids", False, "read container task ids")
    p.add_argument("--pod-source", default=POD_SOURCE_APISERVER,
                   choices=(POD_SOURCE_APISERVER, POD_SOURCE_KUBELET),
                   help="Not upstream (upstream always asks kubelet): where this node's pods "
                        "come from, the API server (spec.nodeName field selector) or kubelet's "
                        "/pods/ (default apiserver)")


def build_parser() -> argparse.ArgumentParser:
    host_mode = os.environ.get("agent_mode") == HOST_MODE
    p = argparse.ArgumentParser(
        prog=PROG, description="koordlet: the node agent (metrics collection, metric cache, "
                               "cgroup executor, runtime hooks server and reconciler).")
    p.add_argument("--addr", default=":9316", help="The address the metric endpoint binds to.")
    flags.add_bool(p, "--enable-pprof", False, "Enable pprof (accepted; nothing is served).")
    p.add_argument("--pprof-addr", default=":9317", help="The address the pprof binds to.")
    add_client_flags(p, qps=20, burst=30, master=False)
    p.add_argument("--configmap-name", default="koordlet-config")
    p.add_argument("--configmap-namespace", default="koordinator-system")
    koordlet_feature_gate.add_flag(p)
    (Config.host_mode() if host_mode else Config()).add_flags(p)
    p.add_argument("--cgroup-kube-path", default="kubepods/",
                   help="Cgroup kube dir, relative to each subsystem root (default kubepods/)")
    flags.add_bool(p, "--simulate-metrics", False,
               "Not upstream, for simulated nodes: node and pod usage come from the "
               "sim.koordinator.sh/usage annotations, and a fake cgroup tree is laid out "
               "under --cgroup-root-dir when it has none")
    _add_states_informer_flags(p.add_argument_group("statesinformer"))
    g = p.add_argument_group("metricsadvisor")
    g.add_argument("--collect-res-used-interval", type=flags.duration, default=1.0,
                   help="Collect node/pod resource usage interval (default 1s); <1s disables "
                        "metricsadvisor")
    g.add_argument("--collect-sys-metric-outdated-interval", type=flags.duration, default=10.0)
    g.add_argument("--collect-node-cpu-info-interval", type=flags.duration, default=60.0,
                   help="Collect node cpu info interval (default 1m0s)")
    g.add_argument("--collect-node-storage-info-interval", type=flags.duration, default=1.0)
    g.add_argument("--psi-collector-interval", type=flags.duration, default=10.0)
    g.add_argument("--cpi-collector-interval", type=flags.duration,
                   default=DEFAULT_INTERVAL_SECONDS, help="Collect cpi interval (default 1m0s)")
    g.add_argument("--collect-cpi-timewindow", type=flags.duration,
                   default=DEFAULT_TIME_WINDOW_SECONDS,
                   help="Collect cpi time window (default 10s)")
    flags.add_bool(g, "--enable-pagecache-collector", False,
               "Collect node, pod and container memory usage with page cache")
    g = p.add_argument_group("metriccache")
    g.add_argument("--metric-gc-interval-seconds", type=int, default=300)
    g.add_argument("--metric-expire-seconds", type=int, default=1800)
    g.add_argument("--tsdb-max-bytes", type=int, default=104857600)
    g = p.add_argument_group("resourceexecutor")
    g.add_argument("--resource-force-update-seconds", type=int,
                   default=DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS,
                   help="rewrite a cached, unchanged cgroup value after this many seconds")
    qos.Config().add_flags(p.add_argument_group("qosmanager"))
    AuditConfig().add_flags(p.add_argument_group("audit"))
    _add_runtime_hooks_flags(p.add_argument_group("runtimehooks"), host_mode)
    klog.add_flags(p)
    return p


def build(args: argparse.Namespace, runner: Runner) -> None:
    node_name = os.environ.get("NODE_NAME", "")
    if not node_name:
        raise ValueError("NODE_NAME env is empty")
    client = runner.connect(ClientOptions(
        kubeconfig=args.kubeconfig or None, qps=args.kube_api_qps, burst=args.kube_api_burst,
        user_agent=USER_AGENT))
    Daemon(args, node_name, client).register(runner)


COMPONENT = Component(PROG, build_parser, build, setup_error="failed to new daemon")


def main(argv: Sequence[str] | None = None, stop: threading.Event | None = None) -> int:
    return run(COMPONENT, argv, stop)


if __name__ == "__main__":
    sys.exit(main())
