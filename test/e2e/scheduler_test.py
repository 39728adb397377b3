"""koord-scheduler end to end: the real process against the embedded API server.

The scheduler runs as ``python -m scheduler.main`` with a KubeSchedulerConfiguration file,
talks to the in-process API server (RBAC on, the chart's roles installed: ``conftest``) over
HTTPS as the chart's ``koord-scheduler`` ServiceAccount, and binds through
``pods/binding``; simulated nodes run the bound pods. NodeMetrics are written by the test in
place of koordlet (what koordlet would report; koordlet itself is another component).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from pkg.client.resources import EVENTS, LEASES, NODE_METRICS, PODS, PRIORITY_CLASSES
from pkg.client.rest import Client
from pkg.component import DEFAULT_GRACE_PERIOD
from test.apiserver import ServerHandle
from test.e2e.cluster import REPO_ROOT, ComponentProcess, http_ok, start_scheduler, wait_for
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
LEASE_DURATION = 3.0

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: %(leader_elect)s
  leaseDuration: %(lease)gs
  renewDeadline: 2s
  retryPeriod: 500ms
  resourceName: koord-scheduler
  resourceNamespace: default
profiles:
- schedulerName: koord-scheduler
  plugins:
    filter: {enabled: [{name: LoadAwareScheduling}]}
    score: {enabled: [{name: LoadAwareScheduling, weight: 1}]}
    reserve: {enabled: [{name: LoadAwareScheduling}]}
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
        - {name: kubernetes.io/batch-cpu, weight: 1}
        - {name: kubernetes.io/batch-memory, weight: 1}
  - name: LoadAwareScheduling
    args:
      filterExpiredNodeMetrics: true
      nodeMetricExpirationSeconds: 300
      usageThresholds: {cpu: 65, memory: 95}
"""


def _config(leader_elect: bool) -> str:
    return CONFIG % {"leader_elect": str(leader_elect).lower(), "lease": LEASE_DURATION}


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, tmp_path: Path) -> Iterator[str]:
    proc, url = start_scheduler(kubeconfig_of(SCHEDULER), _config(leader_elect=False), tmp_path)
    try:
        wait_for(lambda: http_ok(url + "/healthz"),
                 what=f"koord-scheduler healthy; log:\n{proc.log()}")
        yield url
    finally:
        proc.stop()


def _pod(name: str, cpu: str = "100m", memory: str = "128Mi", **spec: Any) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory}
    requests.update(spec.pop("extra_requests", {}))
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": spec.pop("labels", {"app": "e2e"})},
            "spec": {"schedulerName": SCHEDULER, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "pause",
                                     "resources": {"requests": requests,
                                                   "limits": dict(requests)}}], **spec}}


def _node_of(client: Client, name: str) -> str:
    return (client.get(PODS, name, "default").get("spec") or {}).get("nodeName") or ""


def _wait_bound(client: Client, name: str, timeout: float = 20) -> str:
    return wait_for(lambda: _node_of(client, name), timeout, what=f"pod {name} bound")


def _scheduled_condition(client: Client, name: str) -> dict[str, Any] | None:
    for c in (client.get(PODS, name, "default").get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return c
    return None


def _node_metric(client: Client, node: str, cpu_milli: int, age_seconds: float = 0) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - age_seconds))
    obj = client.create(NODE_METRICS, {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node}, "spec": {"metricCollectPolicy": {}}})
    obj["status"] = {"updateTime": stamp, "nodeMetric": {"nodeUsage": {"resources": {
        "cpu": f"{cpu_milli}m", "memory": "1Gi"}}}}
    client.update_status(NODE_METRICS, obj)


def _refused_on(client: Client, node: str, message: str) -> tuple[str, dict[str, Any]]:
    """Creates pods pinned to ``node`` until one is refused with ``message``.

    The scheduler reads NodeMetrics through its own informer, which may lag the test's
    writes: a pod scheduled before the node's NodeMetric arrives is fit there (no metric, no
    filter), so a probe that binds is deleted and another is tried. Returns the refused
    pod's name and its PodScheduled=False condition; a filter that never refuses fails.
    """
    for attempt in range(5):
        name = f"pinned-{attempt}"
        client.create(PODS, _pod(name, nodeSelector={"kubernetes.io/hostname": node}))

        def outcome(name: str = name) -> str | dict[str, Any] | None:
            cond = _scheduled_condition(client, name)
            return _node_of(client, name) or (cond if cond and message in cond["message"]
                                              else None)
        result = wait_for(outcome, what=f"pod {name} bound or refused with {message!r}")
        if isinstance(result, dict):
            return name, result
        client.delete(PODS, name, "default")
    raise AssertionError(f"every pod pinned to {node} was bound, none refused with {message!r}")


def _debug(url: str, key: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/debug/pods/{key}", timeout=5) as r:
        return json.loads(r.read())


def test_pod_is_bound_and_gets_a_scheduled_event(srv: ServerHandle, client: Client,
                                                 scheduler: str) -> None:
    srv.add_nodes(2, cpu="4", memory="8Gi")
    client.create(PODS, _pod("web"))
    node = _wait_bound(client, "web")
    assert node in ("node-0", "node-1")
    wait_for(lambda: any(e["reason"] == "Scheduled" and e["involvedObject"]["name"] == "web"
                         and e["message"] == f"Successfully assigned default/web to {node}"
                         for e in client.list(EVENTS, "default")["items"]),
             what="a Scheduled event")
    with urllib.request.urlopen(scheduler + "/metrics", timeout=5) as r:
        metrics = r.read().decode()
    assert 'scheduler_schedule_attempts_total{profile="koord-scheduler",result="scheduled"} 1.0' \
        in metrics
    assert 'scheduler_pending_pods{queue="active"} 0.0' in metrics
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in metrics


def test_pod_that_fits_nowhere_is_diagnosed(srv: ServerHandle, client: Client,
                                            scheduler: str) -> None:
    srv.add_nodes(2, cpu="2", memory="8Gi")
    srv.add_nodes(1, start=2, cpu="8", memory="8Gi",
                  taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}])
    client.create(PODS, _pod("big", cpu="6"))

    def diagnosed_on_all_nodes() -> dict[str, Any] | None:
        # The scheduler may try before its watch delivered the last node; that node's arrival
        # requeues the pod.
        cond = _scheduled_condition(client, "big")
        return cond if cond is not None and cond["message"].startswith("0/3 ") else None

    cond = wait_for(diagnosed_on_all_nodes, what="PodScheduled=False on all three nodes")
    assert cond["reason"] == "Unschedulable"
    # kube-scheduler's shape, double period included (its PostFilter message ends in one).
    # A request above a node's whole allocatable is unresolvable, so preemption cannot help.
    assert cond["message"] == ("0/3 nodes are available: 1 node(s) had untolerated taint "
                               "{dedicated: infra}, 2 Insufficient cpu. preemption: 0/3 nodes "
                               "are available: 3 Preemption is not helpful for scheduling..")
    entry = _debug(scheduler, "default/big")
    rejections = entry["diagnosis"]["pluginRejections"]
    assert rejections["NodeResourcesFit"]["nodes"] == 2
    assert rejections["TaintToleration"]["nodes"] == 1
    miss = entry["diagnosis"]["nearestMiss"]
    # Every node fails exactly one filter; the tainted node has the cpu, the others don't.
    assert miss["failedPlugins"] in (["NodeResourcesFit"], ["TaintToleration"])
    out = subprocess.run([str(REPO_ROOT / "hack" / "koord"), "explain", "pod", "default/big",
                          "--scheduler", scheduler], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, PYTHON=sys.executable))
    assert out.returncode == 0, out.stderr
    assert "NodeResourcesFit: 2 node(s)" in out.stdout and "Nearest miss" in out.stdout
    events = client.list(EVENTS, "default")["items"]
    assert any(e["reason"] == "FailedScheduling" and e["message"] == cond["message"]
               for e in events)
    # A node that fits arrives: the pod is requeued by the node event and bound there.
    srv.add_nodes(1, start=3, cpu="8", memory="8Gi")
    assert _wait_bound(client, "big") == "node-3"


def test_node_above_cpu_threshold_gets_no_new_pods(srv: ServerHandle, client: Client,
                                                   scheduler: str) -> None:
    srv.add_nodes(2, cpu="4", memory="8Gi")
    _node_metric(client, "node-0", cpu_milli=3600)  # 90% > 65%
    _node_metric(client, "node-1", cpu_milli=400)
    pinned, _ = _refused_on(client, "node-0", "1 node(s) cpu usage exceed threshold")
    for i in range(4):
        client.create(PODS, _pod(f"p{i}"))
    assert {_wait_bound(client, f"p{i}") for i in range(4)} == {"node-1"}
    # The load drops: the NodeMetric update requeues the pod and it lands.
    nm = client.get(NODE_METRICS, "node-0")
    nm["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] = "500m"
    nm["status"]["updateTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    client.update_status(NODE_METRICS, nm)
    assert _wait_bound(client, pinned, timeout=30) == "node-0"


def test_expired_node_metric_is_filtered(srv: ServerHandle, client: Client,
                                         scheduler: str) -> None:
    srv.add_nodes(2, cpu="4", memory="8Gi")
    _node_metric(client, "node-0", cpu_milli=100, age_seconds=600)  # older than 300 s
    _node_metric(client, "node-1", cpu_milli=100)
    _refused_on(client, "node-0", "1 node(s) nodeMetric expired")
    client.create(PODS, _pod("b", nodeSelector={"kubernetes.io/hostname": "node-1"}))
    assert _wait_bound(client, "b") == "node-1"


def test_batch_pods_land_only_where_batch_allocatable_fits(srv: ServerHandle, client: Client,
                                                           scheduler: str) -> None:
    srv.add_nodes(1, cpu="8", memory="16Gi",
                  extra={"kubernetes.io/batch-cpu": "3000", "kubernetes.io/batch-memory": "4Gi"})
    srv.add_nodes(3, start=1, cpu="8", memory="16Gi")
    batch = {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": "1Gi"}
    for i in range(3):
        client.create(PODS, _pod(f"batch-{i}", cpu="0", memory="0",
                                 labels={"koordinator.sh/qosClass": "BE"},
                                 extra_requests=batch))
    assert {_wait_bound(client, f"batch-{i}") for i in range(3)} == {"node-0"}
    client.create(PODS, _pod("batch-3", cpu="0", memory="0", extra_requests=batch))
    cond = wait_for(lambda: _scheduled_condition(client, "batch-3"), what="PodScheduled=False")
    # node-0's batch cpu is used up; the other nodes have no batch resources at all.
    assert cond["message"].startswith(
        "0/4 nodes are available: 3 Insufficient kubernetes.io/batch-memory, "
        "4 Insufficient kubernetes.io/batch-cpu.")


def test_higher_priority_pod_preempts_a_lower_one(srv: ServerHandle, client: Client,
                                                  scheduler: str) -> None:
    for name, value in (("low", 0), ("high", 1000)):
        client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                         "kind": "PriorityClass", "metadata": {"name": name},
                                         "value": value})
    srv.add_nodes(1, cpu="2", memory="8Gi")
    client.create(PODS, _pod("victim", cpu="1500m", priorityClassName="low"))
    assert _wait_bound(client, "victim") == "node-0"
    client.create(PODS, _pod("important", cpu="1500m", priorityClassName="high"))
    assert _wait_bound(client, "important", timeout=30) == "node-0"
    names = [p["metadata"]["name"] for p in client.list(PODS, "default")["items"]]
    assert "victim" not in names


def test_two_replicas_never_both_schedule(srv: ServerHandle, client: Client,
                                          kubeconfig_of: KubeconfigOf, tmp_path: Path) -> None:
    srv.add_nodes(2, cpu="4", memory="8Gi")
    config = _config(leader_elect=True)
    a, _ = start_scheduler(kubeconfig_of(SCHEDULER), config, tmp_path, name="a")
    wait_for(lambda: "is scheduling" in a.log(), what=f"a leads; log:\n{a.log()}")
    b, _ = start_scheduler(kubeconfig_of(SCHEDULER), config, tmp_path, name="b")
    try:
        client.create(PODS, _pod("first"))
        _wait_bound(client, "first")
        time.sleep(4)  # longer than a lease: b must stay a standby
        assert "is scheduling" not in b.log()
        a.kill()
        wait_for(lambda: "is scheduling" in b.log(), timeout=30, what="b takes over")
        client.create(PODS, _pod("second"))
        _wait_bound(client, "second")
    finally:
        a.stop()
        b.stop()


def _identity(proc: ComponentProcess) -> str:
    """The Lease identity the replica announced in its log."""
    marker = "(identity "
    line = next(line for line in proc.log().splitlines() if marker in line)
    return line.split(marker, 1)[1].rstrip(")")


def test_a_stopped_leader_releases_the_lease(client: Client, kubeconfig_of: KubeconfigOf,
                                             tmp_path: Path) -> None:
    config = _config(leader_elect=True)
    a, _ = start_scheduler(kubeconfig_of(SCHEDULER), config, tmp_path, name="a")
    b: ComponentProcess | None = None
    try:
        wait_for(lambda: "is scheduling" in a.log(), what=f"a leads; log:\n{a.log()}")
        b, _ = start_scheduler(kubeconfig_of(SCHEDULER), config, tmp_path, name="b")
        wait_for(lambda: f"new leader elected: {_identity(a)}" in b.log(),
                 what=f"b stands by; log:\n{b.log()}")
        signalled = time.monotonic()
        a.stop()  # SIGTERM: a graceful stop gives the lease back at once
        exited = time.monotonic()
        print(f"leader exited {exited - signalled:.2f}s after SIGTERM")
        assert a.proc.returncode == 0
        assert exited - signalled < DEFAULT_GRACE_PERIOD
        assert "released lease" in a.log()
        standby = b
        wait_for(lambda: "is scheduling" in standby.log(), timeout=LEASE_DURATION + 5,
                 interval=0.02, what="b takes over")
        print(f"standby scheduling {time.monotonic() - exited:.2f}s after the leader exited")
        assert time.monotonic() - exited < LEASE_DURATION
        assert client.get(LEASES, SCHEDULER, "default")["spec"]["holderIdentity"] == \
            _identity(b)
    finally:
        a.stop()
        if b is not None:
            b.stop()


# Out-of-tree plugins ----------------------------------------------------------------------------


def _readme_example(language: str) -> str:
    """The ``language`` code block of README.md's out-of-tree plugin example, as written."""
    section = (REPO_ROOT / "README.md").read_text().split("### Out-of-tree plugins", 1)[1]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def test_an_out_of_tree_plugin_changes_placements(srv: ServerHandle, client: Client,
                                                  kubeconfig_of: KubeconfigOf,
                                                  tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"  # outside the repository's packages
    plugins.mkdir()
    module = plugins / "prefer_label.py"
    module.write_text(_readme_example("python"))
    config = yaml.safe_load(_readme_example("yaml"))
    # The README's profile, beside a default one to compare with.
    config["profiles"].insert(0, {"schedulerName": "default-scheduler"})
    config.update(apiVersion="kubescheduler.config.k8s.io/v1",
                  kind="KubeSchedulerConfiguration", leaderElection={"leaderElect": False})
    srv.add_nodes(1, cpu="16", memory="32Gi")
    srv.add_nodes(1, start=1, cpu="2", memory="4Gi", labels={"example.com/preferred": "true"})
    proc, url = start_scheduler(kubeconfig_of(SCHEDULER), yaml.safe_dump(config), tmp_path,
                                extra=["--plugin-module", str(module)])
    try:
        wait_for(lambda: http_ok(url + "/healthz"),
                 what=f"koord-scheduler healthy; log:\n{proc.log()}")
        # The default plugins pick the big empty node...
        client.create(PODS, _pod("plain", schedulerName="default-scheduler"))
        assert _wait_bound(client, "plain") == "node-0"
        # ... the plugin, the labelled one.
        client.create(PODS, _pod("preferring"))
        assert _wait_bound(client, "preferring") == "node-1"
    finally:
        proc.stop()


def test_a_bad_plugin_module_stops_the_scheduler(kubeconfig_of: KubeconfigOf,
                                                 tmp_path: Path) -> None:
    module = tmp_path / "broken_plugin.py"
    module.write_text("import no_such_dependency\n")
    proc, _ = start_scheduler(kubeconfig_of(SCHEDULER), _config(leader_elect=False), tmp_path,
                              extra=["--plugin-module", str(module)])
    try:
        assert proc.proc.wait(60) == 1
    finally:
        proc.stop()
    assert (f"plugin module {str(module)!r}: importing it failed: ModuleNotFoundError: "
            "No module named 'no_such_dependency'") in proc.log()
