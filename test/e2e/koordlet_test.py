"""koordlet end to end: real ``python -m koordlet.main`` processes against the embedded API
server with the chart's RBAC (``conftest``), each koordlet under the chart's ``koordlet``
ServiceAccount.

* Real mode on this machine: the NodeMetric status koordlet reports agrees with psutil's view
  of the same window (CPU under one busy process, memory without page cache).
* NodeSLO changes reach a test-owned real cgroup v1 subtree (``--cgroup-kube-path`` below it):
  cpusuppress sets and recovers the BE cgroup's ``cpu.cfs_quota_us`` within one
  ``--cpu-suppress-interval-seconds``, and the batch-resource hook rule flips a BE pod's quota.
* Simulated mode (``--simulate-metrics``): two simulated nodes report exactly the usage their
  pods' ``sim.koordinator.sh/usage`` annotations declare, plus the node's system usage.
* Gate ``PSICollector``: pod and container PSI on ``/metrics`` follow a pod's pressure files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest

from api.core import quantity_value
from koordlet.util.system.testing import fake_v2_tree, make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.client.resources import NODE_METRICS, NODE_SLOS, NODES, PODS
from pkg.client.rest import Client
from pkg.component import DEFAULT_GRACE_PERIOD
from test.apiserver import ServerHandle
from test.e2e.cluster import http_ok, wait_for
from test.e2e.conftest import Launch

REPORT_INTERVAL = 30  # the floor of reportIntervalSeconds


pytestmark = pytest.mark.without_webhooks


def node_metric(client: Client, node: str, **policy: Any) -> None:
    client.create(NODE_METRICS, {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric",
        "metadata": {"name": node},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": REPORT_INTERVAL,
                                         "aggregateDurationSeconds": 60, **policy}}})


def reported_status(client: Client, node: str) -> dict[str, Any] | None:
    status = client.get(NODE_METRICS, node).get("status") or {}
    return status if status.get("nodeMetric") else None


def usage(resources: dict[str, str]) -> tuple[float, float]:
    """(cpu cores, memory bytes) of a NodeMetric ResourceMap."""
    return (float(quantity_value(resources["cpu"])),
            float(quantity_value(resources["memory"])))


def test_real_mode_reports_node_usage_psutil_agrees_with(
        client: Client, koordlets: Launch, tmp_path: Path) -> None:
    """Two koordlets read this machine: one as upstream's default, one with the page cache
    collector on and its NodeMetric asking for ``usageWithPageCache``."""
    node, with_cache = "real-0", "real-page-cache"
    for name in (node, with_cache):
        client.create(NODES, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    node_metric(client, node)
    node_metric(client, with_cache, nodeMemoryCollectPolicy="usageWithPageCache")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    # Memory moves while the window is open (other tests run beside this one): koordlet's
    # average must lie within what this machine went through, sampled all along.
    used: list[float] = []
    used_with_cache: list[float] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.2):
            vm = psutil.virtual_memory()
            used.append(vm.total - vm.available)
            used_with_cache.append(vm.total - vm.free)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        time.sleep(1)  # the busy loop is running before either window opens
        k = koordlets(node)
        k_cache = koordlets(with_cache, "--enable-pagecache-collector")
        wait_for(lambda: k.metric("koordlet_node_used_cpu_cores") is not None and
                 k_cache.metric("koordlet_node_used_cpu_cores") is not None, timeout=20,
                 what="koordlet_node_used_cpu_cores on /metrics")
        psutil.cpu_percent()  # opens psutil's window as koordlet's first rate is stored
        status = wait_for(lambda: reported_status(client, node), timeout=REPORT_INTERVAL + 15,
                          interval=0.2, what="NodeMetric status")
        psutil_cores = psutil.cpu_percent() / 100 * _cores()
        cache_status = wait_for(lambda: reported_status(client, with_cache), timeout=15,
                                interval=0.2, what="NodeMetric status with page cache")
    finally:
        sampling.set()
        sampler.join()
        busy.kill()
        busy.wait()
    cpu, memory = usage(status["nodeMetric"]["nodeUsage"]["resources"])
    _, memory_with_cache = usage(cache_status["nodeMetric"]["nodeUsage"]["resources"])
    print(f"NodeMetric cpu={cpu:.3f} cores memory={memory / 2**20:.0f}Mi "
          f"with page cache={memory_with_cache / 2**20:.0f}Mi; psutil cpu={psutil_cores:.3f} "
          f"cores memory {min(used) / 2**20:.0f}-{max(used) / 2**20:.0f}Mi, with page cache "
          f"{min(used_with_cache) / 2**20:.0f}-{max(used_with_cache) / 2**20:.0f}Mi")
    assert cpu == pytest.approx(psutil_cores, rel=0.10)
    # Upstream's node memory is MemTotal − MemAvailable (without page cache); with page cache
    # MemTotal − MemFree.
    assert 0.9 * min(used) <= memory <= 1.1 * max(used)
    assert 0.9 * min(used_with_cache) <= memory_with_cache <= 1.1 * max(used_with_cache)
    assert psutil_cores >= 0.8  # the busy process shows, so 10 % is not noise
    assert status["podsMetric"] == []


def _read(path: Path) -> int:
    return int(path.read_text())


def _cores() -> int:
    cores = psutil.cpu_count()
    assert cores is not None, "psutil cannot tell this machine's CPU count"
    return cores


def test_node_slo_changes_reach_real_cgroups_within_one_interval(
        srv: ServerHandle, client: Client, koordlets: Launch) -> None:
    cores = _cores()
    (node,) = srv.add_nodes(1, prefix="slo-", cpu=str(cores))
    with real_cgroup_v1_tree() as env:
        make_real_cgroup_dir(env, "kubepods/besteffort")
        pod = client.create(PODS, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "batch", "namespace": "default",
                         "labels": {"koordinator.sh/qosClass": "BE"}},
            "spec": {"nodeName": node, "containers": [{
                "name": "c", "image": "pause", "resources": {
                    "requests": {"kubernetes.io/batch-cpu": "500"},
                    "limits": {"kubernetes.io/batch-cpu": "500"}}}]}}, "default")
        pod_dir = f"kubepods/besteffort/pod{pod['metadata']['uid']}"
        make_real_cgroup_dir(env, pod_dir)
        cpu_root = Path(env.root, "cpu", env.prefix)
        be_quota = cpu_root / "kubepods/besteffort/cpu.cfs_quota_us"
        pod_quota = cpu_root / pod_dir / "cpu.cfs_quota_us"
        koordlets(node, f"--cgroup-root-dir={env.root}",
                  f"--cgroup-kube-path={env.prefix}/kubepods/",
                  "--cpu-suppress-interval-seconds=1", "--runtime-hooks-reconcile-interval=5s")
        # No NodeSLO: the batch hook gives the BE pod its batch-cpu limit as quota.
        wait_for(lambda: _read(pod_quota) == 50000, timeout=20, what="BE pod quota 50000")
        assert _read(be_quota) == -1

        client.create(NODE_SLOS, {
            "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": node},
            "spec": {"resourceUsedThresholdWithBE": {
                "enable": True, "cpuSuppressThresholdPercent": 80,
                "cpuSuppressPolicy": "cfsQuota"}}})
        t0 = time.monotonic()
        wait_for(lambda: _read(be_quota) > 0, timeout=1 + 3, interval=0.05,
                 what="BE cgroup quota set by cpusuppress")
        applied = time.monotonic() - t0
        # cfsQuota suppression owns BE CPU, so the hook lifts the pod's own quota.
        wait_for(lambda: _read(pod_quota) == -1, timeout=5 + 2, interval=0.05,
                 what="BE pod quota lifted by the batch hook rule")
        hook_applied = time.monotonic() - t0
        suppressed = _read(be_quota)
        assert suppressed <= cores * 80 * 1000  # at most 80 % of the node

        slo = client.get(NODE_SLOS, node)
        slo["spec"]["resourceUsedThresholdWithBE"]["enable"] = False
        client.update(NODE_SLOS, slo)
        t0 = time.monotonic()
        wait_for(lambda: _read(be_quota) == -1, timeout=1 + 3, interval=0.05,
                 what="BE cgroup quota recovered to -1")
        recovered = time.monotonic() - t0
        wait_for(lambda: _read(pod_quota) == 50000, timeout=5 + 2, interval=0.05,
                 what="BE pod quota restored")
        print(f"BE quota {suppressed} after {applied:.2f}s, pod quota lifted after "
              f"{hook_applied:.2f}s, recovered after {recovered:.2f}s")


def _sim_pod(client: Client, name: str, node: str, sim_usage: dict[str, str] | str,
             **labels: str) -> dict[str, Any]:
    return client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels,
                     "annotations": {"sim.koordinator.sh/usage": json.dumps(sim_usage)}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]}},
        "default")


def test_simulated_nodes_report_their_annotated_usage(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    nodes = srv.add_nodes(2, prefix="sim-", cpu="16", memory="64Gi", annotations={
        "sim.koordinator.sh/system-usage": json.dumps({"cpu": "500m", "memory": "2Gi"})})
    declared: dict[str, dict[str, dict[str, str] | str]] = {
        nodes[0]: {"web": {"cpu": "2", "memory": "4Gi"}, "db": {"cpu": "1500m", "memory": "8Gi"},
                   "bad": "{oops"},
        nodes[1]: {"batch": {"cpu": "3", "memory": "1Gi"}},
    }
    for node, pods in declared.items():
        node_metric(client, node)
        for name, sim_usage in pods.items():
            _sim_pod(client, name, node, sim_usage)
    wait_for(lambda: all((p.get("status") or {}).get("phase") == "Running"
                         for p in client.list(PODS, "default")["items"]),
             what="simulated kubelets running the pods")
    for node in nodes:
        koordlets(node, "--simulate-metrics", f"--cgroup-root-dir={tmp_path}/{node}/cgroup")
    for node, pods in declared.items():
        status = wait_for(partial(reported_status, client, node),
                          timeout=REPORT_INTERVAL + 20, interval=0.5,
                          what=f"NodeMetric status of {node}")
        want_cpu = 0.5 + sum(float(quantity_value(u["cpu"])) for u in pods.values()
                             if isinstance(u, dict))
        want_mem = 2 * 2**30 + sum(float(quantity_value(u["memory"])) for u in pods.values()
                                   if isinstance(u, dict))
        cpu, memory = usage(status["nodeMetric"]["nodeUsage"]["resources"])
        print(f"{node}: NodeMetric cpu={cpu} memory={memory}; declared cpu={want_cpu} "
              f"memory={want_mem}")
        assert cpu == pytest.approx(want_cpu, rel=0.02)
        assert memory == pytest.approx(want_mem, rel=0.02)
        assert usage(status["nodeMetric"]["systemUsage"]["resources"]) == pytest.approx(
            (0.5, 2 * 2**30), rel=0.02)
        by_name = {p["name"]: usage(p["podUsage"]["resources"]) for p in status["podsMetric"]}
        assert set(by_name) == set(pods)
        for name, sim_usage in pods.items():
            want = ((float(quantity_value(sim_usage["cpu"])),
                     float(quantity_value(sim_usage["memory"])))
                    if isinstance(sim_usage, dict) else (0.0, 0.0))
            assert by_name[name] == pytest.approx(want, rel=0.02), name
        # The fake cgroup tree has the node's cores, and a dir per running pod.
        assert Path(tmp_path, node, "cgroup/cpuset/cpuset.cpus").read_text() == "0-15\n"
        assert any(Path(tmp_path, node, "cgroup/cpu/kubepods/besteffort").glob("pod*"))


def test_ready_once_synced_and_sigterm_stops_it_within_the_grace_period(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    [node] = srv.add_nodes(1, prefix="sim-", cpu="4", memory="8Gi")
    k = koordlets(node, "--simulate-metrics", f"--cgroup-root-dir={tmp_path}/cgroup")
    wait_for(lambda: http_ok(k.metrics + "/readyz"), timeout=30,
             what=f"koordlet ready; log:\n{k.proc.log()}")
    with urllib.request.urlopen(k.metrics + "/readyz?verbose", timeout=2) as r:
        assert "[+]informer-sync ok" in r.read().decode()
    signalled = time.monotonic()
    assert not k.proc.stop()
    exited = time.monotonic() - signalled
    print(f"koordlet exited {exited:.2f}s after SIGTERM")
    assert k.proc.proc.returncode == 0
    assert exited < DEFAULT_GRACE_PERIOD
    assert "did not stop" not in k.proc.log()



def _series(url: str, name: str, **labels: str) -> float | None:
    """The value of the ``name`` series carrying all of ``labels`` (None: absent or down)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return None


def _pressure(some: float, full: float | None) -> str:
    text = f"some avg10={some:.2f} avg60=2.25 avg300=3.00 total=12345\n"
    return text + (f"full avg10={full:.2f} avg60=0.75 avg300=1.00 total=678\n"
                   if full is not None else "")


def test_psi_collector_exports_what_the_cgroup_files_say(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    """Gate PSICollector: pod and container PSI on /metrics with upstream's labels, following
    the pressure files. The cgroup v2 tree (cgroupfs driver) is laid out under a temp dir as
    the kernel does: this machine mounts v1."""
    (node,) = srv.add_nodes(1, prefix="psi-")
    pod = client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "pause"}]}},
        "default")
    statuses = wait_for(lambda: (client.get(PODS, "web", "default").get("status") or {})
                        .get("containerStatuses"), what="the simulated kubelet runs web")
    container_id = statuses[0]["containerID"]
    root = tmp_path / "cgroup"
    (root / "kubepods").mkdir(parents=True)
    env = fake_v2_tree(root, [])
    pod_dir = env.pod_dir("BestEffort", pod["metadata"]["uid"])
    container_dir = env.container_dir(pod_dir, container_id)
    fake_v2_tree(root, [container_dir])
    for d, cpu in ((pod_dir, _pressure(1.5, None)), (container_dir, _pressure(4.0, 0.5))):
        (root / d / "cpu.pressure").write_text(cpu)
        (root / d / "memory.pressure").write_text(_pressure(7.0, 6.0))
        (root / d / "io.pressure").write_text(_pressure(0.25, 0.125))
    k = koordlets(node, f"--cgroup-root-dir={root}", "--feature-gates=PSICollector=true",
                  "--psi-collector-interval=1s")
    url = k.metrics + "/metrics"
    pod_labels = {"node": node, "pod_name": "web", "pod_namespace": "default",
                  "pod_uid": pod["metadata"]["uid"]}

    def pod_psi(resource: str, degree: str, precision: str = "avg10") -> float | None:
        return _series(url, "koordlet_pod_psi", **pod_labels, psi_resource_type=resource,
                       psi_degree=degree, psi_precision=precision)

    assert wait_for(lambda: pod_psi("mem", "some"), timeout=30,
                    what="koordlet_pod_psi on /metrics") == 7.0
    assert pod_psi("cpu", "some") == 1.5 and pod_psi("io", "full", "avg300") == 1.0
    assert pod_psi("cpu", "full") is None  # the pod's cpu.pressure has no full line
    container = _series(url, "koordlet_container_psi", **pod_labels,
                        container_id=container_id, container_name="app",
                        psi_resource_type="cpu", psi_degree="full", psi_precision="avg10",
                        cpu_full_supported="true")
    assert container == 0.5

    (root / pod_dir / "memory.pressure").write_text(_pressure(42.0, 6.0))
    wait_for(lambda: pod_psi("mem", "some") == 42.0, timeout=10,
             what="koordlet_pod_psi following memory.pressure")
