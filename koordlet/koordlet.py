"""koordlet's daemon (upstream ``pkg/koordlet/koordlet.go``): ``Daemon`` builds the modules from
the flags (``NewDaemon``) and registers them with the component runner in start order (``Run``).

The cgroup version and driver are detected once under ``--cgroup-root-dir`` (the kubepods root
is ``--cgroup-kube-path``, whose parent dirs, if any, prefix every layout dir). Start order:
``/metrics`` (internal and external series), ``/internal-metrics`` and ``/external-metrics`` on
``--addr`` (and the audit events on ``/events`` with gate ``AuditEventsHTTPHandler``; gate
``AuditEvents`` sets up the auditor on ``--audit-log-dir``) → statesinformer (this node, its
pods from the API server or with ``--pod-source=kubelet`` from kubelet's ``/pods/``, its NodeSLO
and NodeMetric; waited for up to ``STATES_SYNC_TIMEOUT_SECONDS``) → the RuntimeHookService on
``--runtime-hooks-addr`` and ``koordlet.json`` for koord-runtime-proxy → the hook rules, updated
from NodeSLO and node metadata through statesinformer callbacks → metricsadvisor (node usage,
pod and host application usage, CPU topology; pod and container PSI every
``--psi-collector-interval`` with gate ``PSICollector``; container CPI with gate
``CPICollector``) and the metric cache's GC → NodeMetric reporter (every
``reportIntervalSeconds`` of the NodeMetric spec) → NodeResourceTopology report (every
``--node-topology-sync-interval``, written with gate ``NodeTopologyReport``;
``koordlet.statesinformer.node_topology``) → qosmanager (every strategy of
``STRATEGY_PLUGINS``) → the runtime hooks' pod/container and host application reconcilers. Each
loop is a task of the runner named after its module.

``--simulate-metrics`` (not upstream) is for the simulated nodes of the local cluster: the node
and pod collectors are replaced by ``koordlet.metricsadvisor.simulated`` (usage from pod and
node annotations) and, when ``--cgroup-root-dir`` holds no cgroup tree, a fake cgroup v1 tree is
laid out there once statesinformer knows the node's cores, with a dir per running pod, so
qosmanager and the hooks write real files. Not wired: the peak predictor's training loop
(NodeMetric has no prodReclaimable/prodPeak metrics), NRI mode, and kubelet ``/configz`` with
pods from the API server (the topology report takes kubelet's defaults there).
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from typing import Any

import grpc
from prometheus_client import CollectorRegistry

from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.audit import auditor as audit
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig
from koordlet.metrics import metrics
from koordlet.metricsadvisor import framework
from koordlet.metricsadvisor.cpi import CPICollector
from koordlet.metricsadvisor.framework import PodCgroup
from koordlet.metricsadvisor.gauges import NodeUsageGauges
from koordlet.metricsadvisor.hostapplication import HostApplicationCollector
from koordlet.metricsadvisor.nodeinfo import NodeInfoCollector
from koordlet.metricsadvisor.noderesource import NodeResourceCollector
from koordlet.metricsadvisor.pagecache import PageCacheCollector
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.metricsadvisor.podsource import host_app_cgroups, pod_cgroups
from koordlet.metricsadvisor.psi import PSICollector
from koordlet.metricsadvisor.simulated import (
    SimulatedCollector,
    SimulatedNodeInfoCollector,
    be_quota_reader,
    node_cpu_cores,
)
from koordlet.qosmanager import framework as qos
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.reporter.nodemetric_reporter import NodeMetricReporter
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader
from koordlet.runtimehooks.cgroupapply import CgroupApplier, HostAppReconciler, PodReconciler
from koordlet.runtimehooks.hooks import coresched, groupidentity
from koordlet.runtimehooks.hooks.hooks import FailurePolicy
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.rule_update import RuleUpdater
from koordlet.runtimehooks.server import RuntimeHookServer, serve, write_hook_config
from koordlet.statesinformer.callbacks import RegisterType
from koordlet.statesinformer.kubelet_pods import KubeletConfig, KubeletStub
from koordlet.statesinformer.node_topology import (
    KubeletConfigSource,
    KubeletConfigz,
    KubeletDefaults,
    NodeTopologyReporter,
)
from koordlet.statesinformer.states_informer import StatesInformer
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup_env import CgroupEnv, kube_path_prefix
from koordlet.util.system.config import Config
from koordlet.util.system.fake_tree import (
    ensure_fake_v1_tree,
    ensure_pod_dirs,
    fake_v1_env,
    has_cgroup_tree,
)
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import NODE_RESOURCE_TOPOLOGIES
from pkg.client.rest import Client
from pkg.component import Hooks, Runner
from pkg.events.recorder import EventBroadcaster
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import (
    AUDIT_EVENTS,
    AUDIT_EVENTS_HTTP_HANDLER,
    CORE_SCHED,
    CPI_COLLECTOR,
    NODE_METRIC_PROM_METRICS,
    NODE_TOPOLOGY_REPORT,
    PSI_COLLECTOR,
)

# Not upstream (it waits forever): how long startup waits for statesinformer before going on
# with whatever has synced, so a node whose API server is away still collects metrics.
STATES_SYNC_TIMEOUT_SECONDS = 10.0
POD_SOURCE_APISERVER = "apiserver"
POD_SOURCE_KUBELET = "kubelet"

log = logging.getLogger("koordlet")


def failure_policy(flag: str, value: str) -> FailurePolicy:
    try:
        return FailurePolicy(value)
    except ValueError:
        raise ValueError(f"{flag}={value!r}: must be Fail or Ignore") from None


class Daemon:
    """The modules of koordlet, built from the flags (raises ValueError or OSError on bad
    ones) and registered with the runner by ``register``."""

    def __init__(self, args: argparse.Namespace, node_name: str, client: Client) -> None:
        self.args = args
        self.node_name = node_name
        self.failure_policy = failure_policy("--runtime-hooks-failure-policy",
                                             args.runtime_hooks_failure_policy)
        plugin_failure_policy = failure_policy("--runtime-hooks-plugin-failure-policy",
                                               args.runtime_hooks_plugin_failure_policy)
        prefix = kube_path_prefix(args.cgroup_kube_path)
        self.system = Config.from_args(args)
        metrics.register(node_name)
        self.auditor = (audit.setup(audit.Config.from_args(args))
                        if koordlet_feature_gate.enabled(AUDIT_EVENTS) else None)
        metrics.START_TIME.labels(node_name).set(time.time())
        self.executor = ResourceUpdateExecutor(
            force_update_seconds=args.resource_force_update_seconds)
        self.cache = MetricCache(MetricCacheConfig(
            metric_gc_interval_seconds=args.metric_gc_interval_seconds,
            metric_expire_seconds=args.metric_expire_seconds, tsdb_max_bytes=args.tsdb_max_bytes,
            collect_res_used_interval_seconds=max(args.collect_res_used_interval, 1.0)))
        self.kubelet: KubeletStub | None = None
        if args.pod_source == POD_SOURCE_KUBELET:
            self.kubelet = KubeletStub(KubeletConfig(
                args.kubelet_preferred_address_type, args.kubelet_sync_interval,
                args.kubelet_sync_timeout, args.kubelet_insecure_tls,
                args.kubelet_read_only_port), client)
        self.factory = SharedInformerFactory(client)
        self.states = StatesInformer(self.factory, node_name, self.kubelet)
        self.view = StatesView(self.states)
        root = self.system.cgroup_root_dir
        # The simulated tree is laid out after statesinformer synced (it takes the node's
        # cores), but the modules built now need its env.
        self.fake_tree = args.simulate_metrics and not has_cgroup_tree(root)
        self.env = fake_v1_env(root, prefix) if self.fake_tree else CgroupEnv.detect(root, prefix)
        self.advisors = self._advisors()
        self.cpi = (self._cpi_collector() if koordlet_feature_gate.enabled(CPI_COLLECTOR)
                    and not args.simulate_metrics else None)
        self.reporter = NodeMetricReporter(
            client, self.states, self.cache, host_apps=self._host_apps,
            prom_metrics=koordlet_feature_gate.enabled(NODE_METRIC_PROM_METRICS))
        self.topology = self._topology_reporter(client)
        # Upstream's koordlet records through client-go's tools/record as "koordlet" on its
        # node: evictions, malformed annotations the strategies skip.
        self.events = EventBroadcaster(client)
        self.qos_manager = qos.QOSManager(qos.Context(
            env=self.env, executor=self.executor, metric_cache=self.cache, states=self.view,
            feature_gate=koordlet_feature_gate,
            config=qos.Config(**{k: getattr(args, k) for k in qos.Config.__slots__}),
            collect_res_used_interval_seconds=args.collect_res_used_interval,
            event_recorder=self.events.new_recorder("koordlet", node_name),
            client=client, system=self.system), STRATEGY_PLUGINS)
        proc_root = self.system.proc_root_dir
        self.rules = Rules(disable_unset_cpu_quota=args.disable_unset_cpu_quota,
                           group_identity_supported=groupidentity.probe_supported(
                               self.env, proc_root),
                           group_identity_sysctl=groupidentity.sysctl_if_present(proc_root))
        applier = CgroupApplier(self.env, self.executor, proc_root)
        self.servicer = RuntimeHookServer(self.rules, plugin_failure_policy, applier)
        self.reconciler = PodReconciler(self.view.get_all_pods, self.rules, applier,
                                        args.runtime_hooks_reconcile_interval)
        self.host_reconciler = HostAppReconciler(self._host_apps, self.rules, applier,
                                                 args.runtime_hooks_reconcile_interval)
        self.core_sched: coresched.CoreSched | None = None
        if koordlet_feature_gate.enabled(CORE_SCHED):
            ops = coresched.PrctlCoreSched()
            if coresched.probe_supported(ops, proc_root):
                self.core_sched = coresched.CoreSched(self.env, ops)

    def _host_apps(self) -> list[HostApplicationSpec]:
        slo = self.view.get_node_slo()
        return (slo.spec.host_applications or []) if slo is not None else []

    def _topology_reporter(self, client: Client) -> NodeTopologyReporter:
        # As upstream, the NodeResourceTopology informer runs only when the report is on.
        nrt = (self.factory.informer_for(
            NODE_RESOURCE_TOPOLOGIES, field_selector=f"metadata.name={self.node_name}",
            typed=False) if koordlet_feature_gate.enabled(NODE_TOPOLOGY_REPORT) else None)

        def current() -> dict[str, Any] | None:
            items = nrt.indexer.list() if nrt is not None else []
            return items[0] if items else None

        kubelet: KubeletConfigSource | None = None
        if not self.args.disable_query_kubelet_config:
            kubelet = (KubeletConfigz(self.kubelet, self.states.get_node)
                       if self.kubelet is not None else KubeletDefaults())
        return NodeTopologyReporter(
            client, self.states, self.cache, current, kubelet=kubelet,
            var_lib_kubelet=self.system.var_lib_kubelet_root_dir,
            feature_gate=koordlet_feature_gate, interval=self.args.node_topology_sync_interval,
            on_change=lambda: self.states.send_callback(RegisterType.NODE_TOPOLOGY))

    def _advisors(self) -> list[framework.MetricAdvisor]:
        args, env, view = self.args, self.env, self.view
        node_info: framework.Collector
        performance: list[framework.Collector] = []
        if args.simulate_metrics:
            usage: list[framework.Collector] = [NodeUsageGauges(SimulatedCollector(
                view.get_all_pods, view.get_node, lambda: be_quota_reader(env)))]
            node_info = SimulatedNodeInfoCollector(self.cache, view.get_node)
        else:
            reader = CgroupReader(env.root, CGROUP_V2 if env.v2 else CGROUP_V1)

            def pods() -> list[PodCgroup]:
                return pod_cgroups(env, view)

            usage = [NodeUsageGauges(NodeResourceCollector(self.system.proc_root_dir)),
                     PodResourceCollector(reader, pods, args.collect_res_used_interval),
                     # Its own reader: each collector sweeps the files it keeps open.
                     HostApplicationCollector(
                         CgroupReader(env.root, CGROUP_V2 if env.v2 else CGROUP_V1),
                         lambda: host_app_cgroups(env, view), args.collect_res_used_interval)]
            if args.enable_pagecache_collector:
                usage.append(PageCacheCollector(self.system.proc_root_dir, reader, pods))
            node_info = NodeInfoCollector(self.cache, self.system.sys_root_dir,
                                          self.system.proc_root_dir)
            if koordlet_feature_gate.enabled(PSI_COLLECTOR):
                performance.append(PSICollector(reader, pods))
        advisors = [
            framework.MetricAdvisor(self.cache, usage, framework.Config(
                collect_res_used_interval=args.collect_res_used_interval)),
            framework.MetricAdvisor(self.cache, [node_info], framework.Config(
                collect_res_used_interval=args.collect_node_cpu_info_interval)),
        ]
        if performance:
            advisors.append(framework.MetricAdvisor(self.cache, performance, framework.Config(
                collect_res_used_interval=args.psi_collector_interval)))
        return advisors

    def _cpi_collector(self) -> CPICollector:
        env, view = self.env, self.view
        return CPICollector(
            self.cache, lambda: pod_cgroups(env, view),
            env.root if env.v2 else os.path.join(env.root, "perf_event"),
            self.args.cpi_collector_interval, self.args.collect_cpi_timewindow)

    def register(self, runner: Runner) -> None:
        args = self.args
        both = CollectorRegistry()
        both.register(metrics.INTERNAL)
        both.register(metrics.EXTERNAL)
        server = runner.serve(args.addr, registry=both)
        server.add_metrics_path("/internal-metrics", metrics.INTERNAL)
        server.add_metrics_path("/external-metrics", metrics.EXTERNAL)
        if koordlet_feature_gate.enabled(AUDIT_EVENTS_HTTP_HANDLER):
            server.add_handler("/events", audit.handle)
        if self.auditor is not None:
            runner.task("auditor", self.auditor.run)
        runner.informers(self.factory)
        # Before the strategies that record, so it stops (flushing) after them.
        runner.add("events", Hooks(on_stop=lambda: self.events.shutdown(timeout=2)))
        runner.add("statesinformer", _StatesInformer(self.states, self.node_name,
                                                     runner.stopping))
        if args.simulate_metrics:
            runner.add("simulated-cgroups", Hooks(on_start=self._simulated_cgroups))
        runner.add("runtimehooks-server", _HookServer(self.servicer, args, self.failure_policy))
        runner.add("runtimehooks-rules", Hooks(on_start=self._register_rules))
        for i, advisor in enumerate(self.advisors):
            runner.task(f"advisor-{i}", advisor.run)
        if self.cpi is not None:
            runner.task("cpi-collector", self.cpi.run)
        runner.task("metriccache-gc", self.cache.run_gc)
        if args.enable_node_metric_report:
            runner.task("nodemetric-reporter", self.reporter.run)
        runner.task("nodetopology-reporter", self.topology.run)
        runner.task("qosmanager", self._run_qos)
        runner.task("runtimehooks-reconciler", self.reconciler.run)
        runner.task("runtimehooks-host-reconciler", self.host_reconciler.run)
        log.info("koordlet on node %s: metrics on %s, runtime hooks on %s, cgroup %s (%s)%s",
                 self.node_name, args.addr, args.runtime_hooks_addr,
                 "v2" if self.env.v2 else "v1", self.env.driver,
                 ", simulated metrics" if args.simulate_metrics else "")

    def _simulated_cgroups(self) -> None:
        """The fake tree with the node's cores, and a dir per running pod from now on."""
        cpus = node_cpu_cores(self.view.get_node())
        if self.fake_tree and ensure_fake_v1_tree(self.env.root, cpus):
            log.info("laid out a fake cgroup v1 tree for simulated node %s under %s",
                     self.node_name, self.env.root)
        # Registered before the reconciler's callback, so a new pod's dirs exist when it runs.
        self.states.register_callbacks(
            RegisterType.ALL_PODS, "simulated-pod-cgroups",
            "lay out fake cgroup dirs of running pods",
            lambda t, target: ensure_pod_dirs(self.env, self.view.get_all_pods(), cpus))
        ensure_pod_dirs(self.env, self.view.get_all_pods(), cpus)

    def _apply_hooks(self) -> None:
        """The hooks onto every running pod: cgroup values, then core-sched cookies."""
        self.reconciler.reconcile_once()
        if self.core_sched is not None:
            self.core_sched.refresh(self.rules.core_sched, self.view.get_all_pods())

    def _register_rules(self) -> None:
        updater = RuleUpdater(self.rules, self.view.get_node_slo, self.view.get_node,
                              self._reapply_hooks)
        # The initial state: callbacks fire only on changes after registration.
        updater.update_node_slo()
        updater.update_node_metadata()
        self.states.register_callbacks(RegisterType.NODE_SLO_SPEC, "runtimehooks-rules",
                                       "update hook rules from NodeSLO", updater.callback)
        self.states.register_callbacks(RegisterType.NODE_METADATA, "runtimehooks-rules",
                                       "update hook rules from node metadata", updater.callback)
        self.states.register_callbacks(RegisterType.ALL_PODS, "runtimehooks-reconciler",
                                       "apply hooks to running pods",
                                       lambda t, target: self._apply_hooks())
        self.states.register_callbacks(RegisterType.NODE_SLO_SPEC, "host-app-reconciler",
                                       "reconcile cgroup files if host applications changed",
                                       self.host_reconciler.on_node_slo)

    def _reapply_hooks(self) -> None:
        """A rule changed: every pod and host application gets the hooks again now."""
        self._apply_hooks()
        self.host_reconciler.reconcile_once()

    def _run_qos(self, stop: threading.Event) -> None:
        for thread in self.qos_manager.run(stop):
            thread.join()


class _StatesInformer:
    """Starts statesinformer and waits for it to sync, up to ``STATES_SYNC_TIMEOUT_SECONDS``
    (upstream waits before it starts metricsadvisor)."""

    def __init__(self, states: StatesInformer, node_name: str,
                 stopping: threading.Event) -> None:
        self.states = states
        self.node_name = node_name
        self.stopping = stopping
        self._stop = threading.Event()

    def start(self) -> None:
        self.states.start(self._stop)
        deadline = time.monotonic() + STATES_SYNC_TIMEOUT_SECONDS
        while not self.states.has_synced() and time.monotonic() < deadline:
            if self.stopping.wait(0.05):
                return
        if self.states.has_synced():
            log.info("statesinformer of node %s synced", self.node_name)
        else:
            log.warning("statesinformer of node %s not synced after %gs, going on",
                        self.node_name, STATES_SYNC_TIMEOUT_SECONDS)

    def stop(self) -> None:
        self._stop.set()


class _HookServer:
    """The RuntimeHookService on ``--runtime-hooks-addr``, and ``koordlet.json`` naming it
    for koord-runtime-proxy."""

    def __init__(self, servicer: RuntimeHookServer, args: argparse.Namespace,
                 policy: FailurePolicy) -> None:
        self.servicer = servicer
        self.addr: str = args.runtime_hooks_addr
        self.config_path: str = args.runtime_hooks_config_path
        self.host_endpoint: str = args.runtime_hooks_host_endpoint
        self.disable_stages: list[str] = args.runtime_hooks_disable_stages
        self.policy = policy
        self.server: grpc.Server | None = None

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.addr) or ".", exist_ok=True)
        self.server = serve(self.servicer, self.addr)
        try:
            write_hook_config(self.config_path, self.host_endpoint, self.policy,
                              self.disable_stages)
        except OSError:
            self.stop()
            raise

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(grace=1).wait()
            self.server = None
