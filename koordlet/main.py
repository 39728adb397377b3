"""Entry point of koordlet (upstream `cmd/koordlet` and the daemon wiring of
`pkg/koordlet/koordlet.go`).

Built as the py_binary `//koordlet:koordlet`. Startup follows koordlet.md 1.1: `NODE_NAME`
must be set, the kube client uses user agent `koordlet` with `--kube-api-qps`/`--kube-api-burst`,
the cgroup version and driver are detected once under `--cgroup-root-dir`. Then, in upstream's
order: resource executor → metric cache → metricsadvisor (node usage, pod usage, CPU topology)
→ runtime hooks (the RuntimeHookService on `--runtime-hooks-addr`, `koordlet.json` for
koord-runtime-proxy, and the pod/container reconciler). `/metrics`, `/internal-metrics` and
`/external-metrics` are served on `--addr`.

Not wired yet: statesinformer, reporter and qosmanager. Until statesinformer lands, this
node's pods are listed from the API server with a `spec.nodeName` field selector on each
reconcile round, and the hook rules stay at their defaults (no NodeSLO).
`agent_mode=hostMode` switches the path defaults to the host's (1.2.2).
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

from prometheus_client import CollectorRegistry, Gauge

from api.extension.objects import KubeDict
from api.extension.qos import get_kube_qos_class
from api.meta import parse_duration
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.cgroupreader import (
    CGROUP_V1,
    CGROUP_V2,
    CgroupReader,
    ContainerCgroup,
    PodCgroup,
)
from koordlet.metricsadvisor.nodeinfo import NodeInfoCollector
from koordlet.metricsadvisor.noderesource import NodeResourceCollector
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.resourceexecutor.executor import (
    DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS,
    ResourceUpdateExecutor,
)
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.hooks.hooks import FailurePolicy
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.server import RuntimeHookServer, serve, write_hook_config
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config
from pkg import log as klog
from pkg.client.config import ClientOptions, ConfigError, add_client_flags
from pkg.client.resources import PODS
from pkg.client.rest import Client
from pkg.features import koordlet_feature_gate
from pkg.server.server import Server

PROG = "koordlet"
USER_AGENT = "koordlet"
HOST_MODE = "hostMode"
# Not flags upstream: the hook config dir is the default of --runtime-hooks-config-path.
DS_MODE_HOOK_CONFIG_DIR = "/host-etc-hookserver/"
HOST_MODE_HOOK_CONFIG_DIR = "/etc/runtime/hookserver.d"

log = logging.getLogger(PROG)


def _duration(value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _string_slice(value: str) -> list[str]:
    """A pflag StringSlice (`[]` is the empty default as upstream prints it)."""
    return [v.strip() for v in value.strip("[]").split(",") if v.strip()]


def _go_bool(value: str) -> bool:
    if value.lower() in ("1", "t", "true"):
        return True
    if value.lower() in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {value!r}")


def _bool_flag(p: argparse._ActionsContainer, flag: str, default: bool, text: str) -> None:
    p.add_argument(flag, nargs="?", const=True, type=_go_bool, default=default,
                   metavar="BOOL", help=f"{text} (default {str(default).lower()})")


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
    p.add_argument("--runtime-hooks-disable-stages", type=_string_slice, default=[],
                   help="disable stages for runtime hooks")
    _bool_flag(p, "--enable-nri-runtime-hook", True, "enable/disable nri runtime hook")
    p.add_argument("--runtime-hooks-nri-connect-timeout", type=_duration, default=6.0)
    p.add_argument("--runtime-hooks-nri-backoff-duration", type=_duration, default=1.0)
    p.add_argument("--runtime-hooks-nri-backoff-cap", type=_duration,
                   default=4611686018427387903 / 1e9)
    p.add_argument("--runtime-hooks-nri-backoff-steps", type=int, default=2147483647)
    p.add_argument("--runtime-hooks-nri-backoff-factor", type=float, default=2.0)
    p.add_argument("--runtime-hooks-nri-socket-path", default="nri/nri.sock")
    p.add_argument("--runtime-hooks-nri-plugin-name", default="koordlet_nri")
    p.add_argument("--runtime-hooks-nri-plugin-index", default="00")
    p.add_argument("--runtime-hooks-reconcile-interval", type=_duration, default=10.0,
                   help="reconcile interval for each plugins (default 10s)")
    _bool_flag(p, "--disable-unset-cpu-quota", False,
               "stop the cpuset hook from unsetting the quota of cpuset pods")


def build_parser() -> argparse.ArgumentParser:
    host_mode = os.environ.get("agent_mode") == HOST_MODE
    p = argparse.ArgumentParser(
        prog=PROG, description="koordlet: the node agent (metrics collection, metric cache, "
                               "cgroup executor, runtime hooks server and reconciler).")
    p.add_argument("--addr", default=":9316", help="The address the metric endpoint binds to.")
    _bool_flag(p, "--enable-pprof", False, "Enable pprof (accepted; nothing is served).")
    p.add_argument("--pprof-addr", default=":9317", help="The address the pprof binds to.")
    add_client_flags(p, qps=20, burst=30, master=False)
    p.add_argument("--configmap-name", default="koordlet-config")
    p.add_argument("--configmap-namespace", default="koordinator-system")
    koordlet_feature_gate.add_flag(p)
    (Config.host_mode() if host_mode else Config()).add_flags(p)
    g = p.add_argument_group("metricsadvisor")
    g.add_argument("--collect-res-used-interval", type=_duration, default=1.0,
                   help="Collect node/pod resource usage interval (default 1s); <1s disables "
                        "metricsadvisor")
    g.add_argument("--collect-sys-metric-outdated-interval", type=_duration, default=10.0)
    g.add_argument("--collect-node-cpu-info-interval", type=_duration, default=60.0,
                   help="Collect node cpu info interval (default 1m0s)")
    g.add_argument("--collect-node-storage-info-interval", type=_duration, default=1.0)
    g.add_argument("--psi-collector-interval", type=_duration, default=10.0)
    g = p.add_argument_group("metriccache")
    g.add_argument("--metric-gc-interval-seconds", type=int, default=300)
    g.add_argument("--metric-expire-seconds", type=int, default=1800)
    g.add_argument("--tsdb-max-bytes", type=int, default=104857600)
    g = p.add_argument_group("resourceexecutor")
    g.add_argument("--resource-force-update-seconds", type=int,
                   default=DEFAULT_RESOURCE_FORCE_UPDATE_SECONDS,
                   help="rewrite a cached, unchanged cgroup value after this many seconds")
    _add_runtime_hooks_flags(p.add_argument_group("runtimehooks"), host_mode)
    klog.add_flags(p)
    return p


def _failure_policy(flag: str, value: str) -> FailurePolicy:
    try:
        return FailurePolicy(value)
    except ValueError:
        raise ValueError(f"{flag}={value!r}: must be Fail or Ignore") from None


class NodePods:
    """This node's pods from the API server (statesinformer's job once it lands)."""

    def __init__(self, client: Client, node_name: str, env: CgroupEnv) -> None:
        self.client = client
        self.node_name = node_name
        self.env = env
        self._pods: list[KubeDict] = []

    def refresh(self) -> list[KubeDict]:
        """A failed list keeps the old set, as upstream's pod informer does."""
        try:
            self._pods = self.client.list_all(
                PODS, field_selector=f"spec.nodeName={self.node_name}").get("items") or []
        except Exception as e:  # noqa: BLE001 - the API server being away is not fatal
            log.warning("cannot list pods of node %s: %s", self.node_name, e)
        return self._pods

    def cgroups(self) -> list[PodCgroup]:
        out = []
        for pod in self._pods:
            pod_dir = self.env.pod_dir(get_kube_qos_class(pod), pod["metadata"]["uid"])
            containers = tuple(
                ContainerCgroup(cs["containerID"], self.env.container_dir(pod_dir,
                                                                          cs["containerID"]))
                for cs in (pod.get("status") or {}).get("containerStatuses") or []
                if cs.get("containerID"))
            out.append(PodCgroup(pod["metadata"]["uid"], pod_dir, containers))
        return out


class NodeUsageGauges:
    """Wraps the node collector to export `koordlet_node_used_{cpu_cores,memory_bytes}`."""

    def __init__(self, inner: NodeResourceCollector, registry: CollectorRegistry,
                 node_name: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.cpu = Gauge("node_used_cpu_cores", "Number of cpu cores used by node in realtime",
                         ["node"], namespace="koordlet", registry=registry).labels(node_name)
        self.memory = Gauge("node_used_memory_bytes", "Number of memory used by node in "
                            "realtime", ["node"], namespace="koordlet",
                            registry=registry).labels(node_name)

    def collect(self, now: float) -> list[MetricSample]:
        samples = self.inner.collect(now)
        for s in samples:
            if s.kind == mt.NODE_CPU_USAGE:
                self.cpu.set(s.value)
            elif s.kind == mt.NODE_MEMORY_USAGE:
                self.memory.set(s.value)
        return samples


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
        client = Client.from_options(ClientOptions(
            kubeconfig=args.kubeconfig or None, qps=args.kube_api_qps,
            burst=args.kube_api_burst, user_agent=USER_AGENT))
        system = Config.from_args(args)
        env = CgroupEnv.detect(system.cgroup_root_dir)
    except (ConfigError, ValueError, OSError) as err:
        log.error("failed to new daemon: %s", err)
        return 1
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
    return _run(args, node_name, client, system, env, failure_policy, plugin_failure_policy,
                stop)


def _run(args: argparse.Namespace, node_name: str, client: Client, system: Config,
         env: CgroupEnv, failure_policy: FailurePolicy, plugin_failure_policy: FailurePolicy,
         stop: threading.Event) -> int:
    registry = CollectorRegistry()
    Gauge("start_time", "the start time of koordlet", ["node"], namespace="koordlet",
          registry=registry).labels(node_name).set(time.time())
    metrics = Server(args.addr, registry=registry)
    for path in ("/internal-metrics", "/external-metrics"):
        metrics.add_metrics_path(path, registry)
    executor = ResourceUpdateExecutor(force_update_seconds=args.resource_force_update_seconds)
    cache = MetricCache(MetricCacheConfig(
        metric_gc_interval_seconds=args.metric_gc_interval_seconds,
        metric_expire_seconds=args.metric_expire_seconds, tsdb_max_bytes=args.tsdb_max_bytes,
        collect_res_used_interval_seconds=max(args.collect_res_used_interval, 1.0)))
    pods = NodePods(client, node_name, env)
    reader = CgroupReader(env.root, CGROUP_V2 if env.v2 else CGROUP_V1)
    advisors = [
        framework.MetricAdvisor(cache, [
            NodeUsageGauges(NodeResourceCollector(system.proc_root_dir), registry, node_name),
            PodResourceCollector(reader, pods.cgroups, args.collect_res_used_interval),
        ], framework.Config(collect_res_used_interval=args.collect_res_used_interval)),
        framework.MetricAdvisor(cache, [NodeInfoCollector(cache, system.sys_root_dir)],
                                framework.Config(
                                    collect_res_used_interval=args.collect_node_cpu_info_interval)),
    ]
    rules = Rules()
    applier = CgroupApplier(env, executor, system.proc_root_dir)
    servicer = RuntimeHookServer(rules, plugin_failure_policy, applier)
    reconciler = PodReconciler(pods.refresh, rules, applier,
                               args.runtime_hooks_reconcile_interval)
    hook_server = None
    try:
        metrics.start()
        os.makedirs(os.path.dirname(args.runtime_hooks_addr) or ".", exist_ok=True)
        hook_server = serve(servicer, args.runtime_hooks_addr)
        write_hook_config(args.runtime_hooks_config_path, args.runtime_hooks_host_endpoint,
                          failure_policy, args.runtime_hooks_disable_stages)
    except OSError as err:
        log.error("failed to start koordlet: %s", err)
        if hook_server is not None:
            hook_server.stop(grace=None)
        metrics.stop()
        return 1
    log.info("koordlet on node %s: metrics on %s, runtime hooks on %s, cgroup %s (%s)",
             node_name, metrics.url, args.runtime_hooks_addr, "v2" if env.v2 else "v1",
             env.driver)
    threads = [threading.Thread(target=a.run, args=(stop,), daemon=True, name=f"advisor-{i}")
               for i, a in enumerate(advisors)]
    threads.append(threading.Thread(target=reconciler.run, args=(stop,), daemon=True,
                                    name="runtimehooks-reconciler"))
    threads.append(threading.Thread(target=_metric_gc, args=(cache, stop), daemon=True,
                                    name="metriccache-gc"))
    for t in threads:
        t.start()
    try:
        stop.wait()
    finally:
        hook_server.stop(grace=1)
        metrics.stop()
        for t in threads:
            t.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
