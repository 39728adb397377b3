"""Entry point of koordlet (upstream `cmd/koordlet` and the daemon wiring of
`pkg/koordlet/koordlet.go`).

Built as the py_binary `//koordlet:koordlet`. Startup follows koordlet.md 1.1: `NODE_NAME`
must be set, the kube client uses user agent `koordlet` with `--kube-api-qps`/`--kube-api-burst`,
the cgroup version and driver are detected once under `--cgroup-root-dir` (the kubepods root is
`--cgroup-kube-path`, whose parent dirs, if any, prefix every layout dir). Then, in upstream's
order: resource executor → metric cache → statesinformer (this node, its pods from the API
server or with `--pod-source=kubelet` from kubelet's `/pods/`, its NodeSLO and NodeMetric;
waited for up to `STATES_SYNC_TIMEOUT_SECONDS`) → metricsadvisor (node usage, pod usage, CPU
topology) → NodeMetric reporter (every `reportIntervalSeconds` of the NodeMetric spec) →
qosmanager (every strategy of `STRATEGY_PLUGINS`) → runtime hooks (the RuntimeHookService on
`--runtime-hooks-addr`, `koordlet.json` for koord-runtime-proxy, the pod/container reconciler,
and rules updated from NodeSLO and node metadata through statesinformer callbacks).
`/metrics` (internal and external series), `/internal-metrics` and `/external-metrics` are
served on `--addr`.

`--simulate-metrics` (not upstream) is for the simulated nodes of the local cluster: the node
and pod collectors are replaced by `koordlet.metricsadvisor.simulated` (usage from pod and
node annotations) and, when `--cgroup-root-dir` holds no cgroup tree, a fake cgroup v1 tree is
laid out there, with a dir per running pod, so qosmanager and the hooks write real files.
`agent_mode=hostMode` switches the path defaults to the host's (1.2.2). Not wired: the peak
predictor's training loop (NodeMetric has no prodReclaimable/prodPeak metrics), NRI mode,
node topology reporting and kubelet `/configz`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

from prometheus_client import CollectorRegistry

from api.extension.qos import KubeQoSClass, get_kube_qos_class
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig
from koordlet.metrics import metrics
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.cgroupreader import (
    CGROUP_V1,
    CGROUP_V2,
    CgroupReader,
    ContainerCgroup,
    PodCgroup,
)
from koordlet.metricsadvisor.nodeinfo import NodeInfoCollector
from koordlet.metricsadvisor.noderesource import NodeResourceCollector, NodeUsageGauges
from koordlet.metricsadvisor.pagecache import PageCacheCollector
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.metricsadvisor.simulated import (
    SimulatedCollector,
    SimulatedNodeInfoCollector,
    be_quota_cores,
    capacity_cores,
)
from koordlet.qosmanager import framework as qos
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.reporter.nodemetric_reporter import NodeMetricReporter
from koordlet.resourceexecutor.executor import (
    DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS,
    ResourceUpdateExecutor,
)
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.hooks.hooks import FailurePolicy
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.rule_update import RuleUpdater
from koordlet.runtimehooks.server import RuntimeHookServer, serve, write_hook_config
from koordlet.statesinformer.callbacks import RegisterType
from koordlet.statesinformer.kubelet_pods import (
    ADDRESS_TYPES,
    DEFAULT_ADDRESS_TYPE,
    KubeletConfig,
    KubeletStub,
)
from koordlet.statesinformer.states_informer import StatesInformer
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup import CgroupError, cgroup_file_read
from koordlet.util.system.cgroup_driver import KUBE_ROOT
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config
from koordlet.util.system.fake_tree import ensure_fake_v1_tree, ensure_pod_dirs
from pkg import log as klog
from pkg.client.config import ClientOptions, ConfigError, add_client_flags
from pkg.client.informers import SharedInformerFactory
from pkg.client.rest import Client
from pkg.features import koordlet_feature_gate
from pkg.server.server import Server
from pkg.util import flags

PROG = "koordlet"
USER_AGENT = "koordlet"
HOST_MODE = "hostMode"
# Not flags upstream: the hook config dir is the default of --runtime-hooks-config-path.
DS_MODE_HOOK_CONFIG_DIR = "/host-etc-hookserver/"
HOST_MODE_HOOK_CONFIG_DIR = "/etc/runtime/hookserver.d"

# Not upstream (it waits forever): how long startup waits for statesinformer before going on
# with whatever has synced, so a node whose API server is away still collects metrics.
STATES_SYNC_TIMEOUT_SECONDS = 10.0
POD_SOURCE_APISERVER = "apiserver"
POD_SOURCE_KUBELET = "kubelet"

log = logging.getLogger(PROG)


def _add_runtime_hooks_flags(p: argparse._ActionsContainer, host_mode: bool) -> None:
    """1.2.7; the NRI flags are accepted, NRI mode itself is not implemented."""
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
    """1.2.3; the topology, configz and task-id flags are accepted and not acted on."""
    p.add_argument("--kubelet-preferred-address-type", default=DEFAULT_ADDRESS_TYPE,
                   help=f"node address type used to reach kubelet ({', '.join(ADDRESS_TYPES)})")
    p.add_argument("--kubelet-sync-interval", type=flags.duration, default=10.0,
                   help="pod list refresh from kubelet (default 10s); <=0 disables it")
    p.add_argument("--kubelet-sync-timeout", type=flags.duration, default=3.0,
                   help="timeout of each kubelet request (default 3s)")
    flags.add_bool(p, "--kubelet-insecure-tls", False,
               "reach kubelet over plain HTTP on --kubelet-read-only-port")
    p.add_argument("--kubelet-read-only-port", type=int, default=10255)
    p.add_argument("--node-topology-sync-interval", type=flags.duration, default=3.0)
    flags.add_bool(p, "--disable-query-kubelet-config", False, "skip kubelet /configz")
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
    _add_runtime_hooks_flags(p.add_argument_group("runtimehooks"), host_mode)
    klog.add_flags(p)
    return p


def _failure_policy(flag: str, value: str) -> FailurePolicy:
    try:
        return FailurePolicy(value)
    except ValueError:
        raise ValueError(f"{flag}={value!r}: must be Fail or Ignore") from None


def kube_path_prefix(kube_path: str) -> str:
    """The dirs above the kubepods root in `--cgroup-kube-path` ("kubepods/" → "")."""
    parts = [part for part in kube_path.split("/") if part]
    if not parts or parts[-1] not in KUBE_ROOT.values():
        raise ValueError(f"--cgroup-kube-path={kube_path!r}: must end in kubepods/ or "
                         "kubepods.slice/")
    return "/".join(parts[:-1])


def node_cpu_cores(node: dict | None) -> int:
    """Node capacity in whole cores (at least 1), else this machine's."""
    return capacity_cores(node) or os.cpu_count() or 1


def pod_cgroups(env: CgroupEnv, view: StatesView) -> list[PodCgroup]:
    """The PodResourceCollector's pods: cgroup dirs (with the kube-path prefix) of this
    node's pods."""
    out = []
    for pod in view.get_all_pods():
        uid = pod["metadata"]["uid"]
        pod_dir = env.pod_dir(get_kube_qos_class(pod), uid)
        containers = tuple(
            ContainerCgroup(cs["containerID"], os.path.join(
                env.prefix, env.container_dir(pod_dir, cs["containerID"])))
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
            if cs.get("containerID"))
        out.append(PodCgroup(uid, os.path.join(env.prefix, pod_dir), containers))
    return out


def be_quota_reader(env: CgroupEnv) -> float | None:
    """The BE cgroup's CPU cap in cores for the simulated source (None: unlimited)."""
    be_dir = env.kube_qos_dir(KubeQoSClass.BEST_EFFORT)
    try:
        quota = int(cgroup_file_read(env.path("cpu.cfs_quota_us", be_dir)))
        period = int(cgroup_file_read(env.path("cpu.cfs_period_us", be_dir)))
    except (CgroupError, ValueError) as e:
        log.debug("no BE cfs quota: %s", e)
        return None
    return be_quota_cores(quota, period)


def _metric_gc(cache: MetricCache, stop: threading.Event) -> None:
    """Expired points and gone pods' series leave every --metric-gc-interval-seconds."""
    while not stop.wait(cache.config.metric_gc_interval_seconds):
        cache.gc(time.time())


def main(argv: Sequence[str] | None = None, stop: threading.Event | None = None) -> int:
    args = build_parser().parse_args(argv)
    klog.setup_from_args(args)
    node_name = os.environ.get("NODE_NAME", "")
    if not node_name:
        log.error("failed to new daemon: NODE_NAME env is empty")
        return 1
    try:
        failure_policy = _failure_policy("--runtime-hooks-failure-policy",
                                         args.runtime_hooks_failure_policy)
        plugin_failure_policy = _failure_policy("--runtime-hooks-plugin-failure-policy",
                                                args.runtime_hooks_plugin_failure_policy)
        prefix = kube_path_prefix(args.cgroup_kube_path)
        client = Client.from_options(ClientOptions(
            kubeconfig=args.kubeconfig or None, qps=args.kube_api_qps,
            burst=args.kube_api_burst, user_agent=USER_AGENT))
        system = Config.from_args(args)
    except (ConfigError, ValueError, OSError) as err:
        log.error("failed to new daemon: %s", err)
        return 1
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    return Daemon(args, node_name, client, system, prefix,
                  failure_policy, plugin_failure_policy).run(stop)


class Daemon:
    """The modules of koordlet, built and started in upstream's order."""

    def __init__(self, args: argparse.Namespace, node_name: str, client: Client,
                 system: Config, prefix: str, failure_policy: FailurePolicy,
                 plugin_failure_policy: FailurePolicy) -> None:
        self.args = args
        self.node_name = node_name
        self.client = client
        self.system = system
        self.prefix = prefix
        self.failure_policy = failure_policy
        self.plugin_failure_policy = plugin_failure_policy
        self.threads: list[threading.Thread] = []

    def _start(self, name: str, target, stop: threading.Event) -> None:
        t = threading.Thread(target=target, args=(stop,), daemon=True, name=name)
        t.start()
        self.threads.append(t)

    def _states(self, stop: threading.Event) -> tuple[SharedInformerFactory, StatesInformer]:
        args = self.args
        kubelet = None
        if args.pod_source == POD_SOURCE_KUBELET:
            kubelet = KubeletStub(KubeletConfig(
                args.kubelet_preferred_address_type, args.kubelet_sync_interval,
                args.kubelet_sync_timeout, args.kubelet_insecure_tls,
                args.kubelet_read_only_port), self.client)
        factory = SharedInformerFactory(self.client)
        states = StatesInformer(factory, self.node_name, kubelet)
        factory.start()
        states.start(stop)
        deadline = time.monotonic() + STATES_SYNC_TIMEOUT_SECONDS
        while not states.has_synced() and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.05)
        if states.has_synced():
            log.info("statesinformer of node %s synced", self.node_name)
        else:
            log.warning("statesinformer of node %s not synced after %gs, going on",
                        self.node_name, STATES_SYNC_TIMEOUT_SECONDS)
        return factory, states

    def _cgroup_env(self, view: StatesView) -> CgroupEnv:
        root = self.system.cgroup_root_dir
        if self.args.simulate_metrics and ensure_fake_v1_tree(
                root, node_cpu_cores(view.get_node())):
            log.info("laid out a fake cgroup v1 tree for simulated node %s under %s",
                     self.node_name, root)
        return CgroupEnv.detect(root, self.prefix)

    def _advisors(self, cache: MetricCache, env: CgroupEnv,
                  view: StatesView) -> list[framework.MetricAdvisor]:
        args = self.args
        node_info: framework.Collector
        if args.simulate_metrics:
            usage: list[framework.Collector] = [NodeUsageGauges(SimulatedCollector(
                view.get_all_pods, view.get_node, lambda: be_quota_reader(env)))]
            node_info = SimulatedNodeInfoCollector(cache, view.get_node)
        else:
            reader = CgroupReader(env.root, CGROUP_V2 if env.v2 else CGROUP_V1)

            def pods() -> list[PodCgroup]:
                return pod_cgroups(env, view)

            usage = [NodeUsageGauges(NodeResourceCollector(self.system.proc_root_dir)),
                     PodResourceCollector(reader, pods, args.collect_res_used_interval)]
            if args.enable_pagecache_collector:
                usage.append(PageCacheCollector(self.system.proc_root_dir, reader, pods))
            node_info = NodeInfoCollector(cache, self.system.sys_root_dir)
        return [
            framework.MetricAdvisor(cache, usage, framework.Config(
                collect_res_used_interval=args.collect_res_used_interval)),
            framework.MetricAdvisor(cache, [node_info], framework.Config(
                collect_res_used_interval=args.collect_node_cpu_info_interval)),
        ]

    def run(self, stop: threading.Event) -> int:
        args = self.args
        metrics.register(self.node_name)
        metrics.START_TIME.labels(self.node_name).set(time.time())
        both = CollectorRegistry()
        both.register(metrics.INTERNAL)
        both.register(metrics.EXTERNAL)
        metrics_server = Server(args.addr, registry=both)
        metrics_server.add_metrics_path("/internal-metrics", metrics.INTERNAL)
        metrics_server.add_metrics_path("/external-metrics", metrics.EXTERNAL)
        executor = ResourceUpdateExecutor(force_update_seconds=args.resource_force_update_seconds)
        cache = MetricCache(MetricCacheConfig(
            metric_gc_interval_seconds=args.metric_gc_interval_seconds,
            metric_expire_seconds=args.metric_expire_seconds, tsdb_max_bytes=args.tsdb_max_bytes,
            collect_res_used_interval_seconds=max(args.collect_res_used_interval, 1.0)))
        try:
            metrics_server.start()
        except OSError as err:
            log.error("failed to start koordlet: %s", err)
            return 1
        factory, states = self._states(stop)
        view = StatesView(states)
        hook_server = None
        try:
            env = self._cgroup_env(view)
            advisors = self._advisors(cache, env, view)
            reporter = NodeMetricReporter(self.client, states, cache)
            qos_manager = qos.QOSManager(qos.Context(
                env=env, executor=executor, metric_cache=cache, states=view,
                feature_gate=koordlet_feature_gate,
                config=qos.Config(**{k: getattr(args, k) for k in qos.Config.__slots__}),
                collect_res_used_interval_seconds=args.collect_res_used_interval,
                client=self.client), STRATEGY_PLUGINS)
            rules = Rules(disable_unset_cpu_quota=args.disable_unset_cpu_quota)
            applier = CgroupApplier(env, executor, self.system.proc_root_dir)
            servicer = RuntimeHookServer(rules, self.plugin_failure_policy, applier)
            reconciler = PodReconciler(view.get_all_pods, rules, applier,
                                       args.runtime_hooks_reconcile_interval)
            os.makedirs(os.path.dirname(args.runtime_hooks_addr) or ".", exist_ok=True)
            hook_server = serve(servicer, args.runtime_hooks_addr)
            write_hook_config(args.runtime_hooks_config_path, args.runtime_hooks_host_endpoint,
                              self.failure_policy, args.runtime_hooks_disable_stages)
        except OSError as err:
            log.error("failed to start koordlet: %s", err)
            if hook_server is not None:
                hook_server.stop(grace=None)
            metrics_server.stop()
            factory.shutdown()
            return 1
        self._register_callbacks(states, view, env, rules, reconciler)
        log.info("koordlet on node %s: metrics on %s, runtime hooks on %s, cgroup %s (%s)%s",
                 self.node_name, metrics_server.url, args.runtime_hooks_addr,
                 "v2" if env.v2 else "v1", env.driver,
                 ", simulated metrics" if args.simulate_metrics else "")
        for i, advisor in enumerate(advisors):
            self._start(f"advisor-{i}", advisor.run, stop)
        self._start("metriccache-gc", lambda s: _metric_gc(cache, s), stop)
        if args.enable_node_metric_report:
            self._start("nodemetric-reporter", reporter.run, stop)
        self.threads += qos_manager.run(stop)
        self._start("runtimehooks-reconciler", reconciler.run, stop)
        try:
            stop.wait()
        finally:
            hook_server.stop(grace=1)
            metrics_server.stop()
            factory.shutdown()
            for t in self.threads:
                t.join(timeout=5)
        return 0

    def _register_callbacks(self, states: StatesInformer, view: StatesView, env: CgroupEnv,
                            rules: Rules, reconciler: PodReconciler) -> None:
        updater = RuleUpdater(rules, view.get_node_slo, view.get_node,
                              reconciler.reconcile_once)
        # The initial state: callbacks fire only on changes after registration.
        updater.update_node_slo()
        updater.update_node_metadata()
        states.register_callbacks(RegisterType.NODE_SLO_SPEC, "runtimehooks-rules",
                                  "update hook rules from NodeSLO", updater.callback)
        states.register_callbacks(RegisterType.NODE_METADATA, "runtimehooks-rules",
                                  "update hook rules from node metadata", updater.callback)
        if self.args.simulate_metrics:
            cpus = node_cpu_cores(view.get_node())
            states.register_callbacks(
                RegisterType.ALL_PODS, "simulated-pod-cgroups",
                "lay out fake cgroup dirs of running pods",
                lambda t, target: ensure_pod_dirs(env, view.get_all_pods(), cpus))
            ensure_pod_dirs(env, view.get_all_pods(), cpus)
        states.register_callbacks(RegisterType.ALL_PODS, "runtimehooks-reconciler",
                                  "apply hooks to running pods",
                                  lambda t, target: reconciler.reconcile_once())


if __name__ == "__main__":
    sys.exit(main())
