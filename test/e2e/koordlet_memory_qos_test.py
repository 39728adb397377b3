"""koordlet memory QoS end to end: a real ``python -m koordlet.main`` (CgroupReconcile on,
``--reconcile-interval-seconds=1``, upstream's default) against the embedded API server with the
chart's RBAC, driven by NodeSLO ``resourceQOSStrategy`` ``lsClass``/``beClass`` ``memoryQOS``.

This machine's kernel mounts cgroup v1 without ``memory.min/low/high`` (those are Anolis-only on
v1), so koordlet is pointed at a cgroup v2 tree laid out under a temp dir as the kernel lays one
out with the systemd driver (``fake_v2_tree``: ``cgroup.controllers`` at the root,
``kubepods.slice``, the QoS slices, each pod's slice and its container's scope, each with the
files a fresh v2 cgroup has, ``memory.min``/``low``/``high``/``oom.group`` among them). No flag
is added for this: koordlet detects v2 from the root's ``cgroup.controllers`` under
``--cgroup-root-dir`` and the systemd driver from ``kubepods.slice``, as upstream does on a node.

Expected values are upstream's formulas (``cgroup_reconcile.go``) on the pods' requests and
limits: ``memory.min``/``low`` = request × min/lowLimitPercent / 100 on the pod and container;
``memory.high`` = request + (limit − request) × throttlingPercent / 100 rounded down to a page
on the container ("max" at 0 %); each QoS slice carries the sum of its pods' min/low and
``kubepods.slice`` the sum of all. A class switched to ``enable: false`` gets the "none"
values: min 0, low 0, high max.
"""

from __future__ import annotations

import mmap
import time
from pathlib import Path
from typing import Any

import pytest

from koordlet.util.system.cgroup import MAX_INT64
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import fake_v2_tree
from pkg.client.resources import NODE_SLOS, PODS
from pkg.client.rest import Client
from test.apiserver import ServerHandle
from test.e2e.cluster import http_ok, wait_for
from test.e2e.conftest import Launch

pytestmark = pytest.mark.without_webhooks

GI = 1 << 30
MI = 1 << 20
RECONCILE_INTERVAL = 1  # --reconcile-interval-seconds
# After the NodeSLO is written: its watch event, then at most one interval, on a busy machine.
SLACK = 3
MAX = "max"
LAYOUT = CgroupEnv()  # the systemd layout, to name the dirs koordlet will find
PODS_SLICE = LAYOUT.kube_qos_dir("Guaranteed")
BURSTABLE = LAYOUT.kube_qos_dir("Burstable")
BESTEFFORT = LAYOUT.kube_qos_dir("BestEffort")


def _high(request: int, limit: int, throttling_percent: int) -> str:
    """Upstream's container memory.high."""
    if throttling_percent == 0:
        return MAX
    high = request + (limit - request) * throttling_percent // 100
    return str(high // mmap.PAGESIZE * mmap.PAGESIZE)


def _pod(client: Client, node: str, name: str, qos: str,
         requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"koordinator.sh/qosClass": qos}},
        "spec": {"nodeName": node, "containers": [{
            "name": "c", "image": "pause",
            "resources": {"requests": requests, "limits": limits}}]}}, "default")


def _running(client: Client, name: str) -> dict[str, Any] | None:
    pod = client.get(PODS, name, "default")
    return pod if (pod.get("status") or {}).get("phase") == "Running" else None


def _node_slo(node: str, ls: dict[str, Any], be: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
            "metadata": {"name": node},
            "spec": {"resourceQOSStrategy": {"lsClass": {"memoryQOS": ls},
                                             "beClass": {"memoryQOS": be}}}}


class Tree:
    """The memcg QoS files of the fake v2 tree, read as the kernel shows them ("max" for the
    largest value)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, parent: str, name: str) -> str:
        text = (self.root / parent / name).read_text().strip()
        return MAX if text == str(MAX_INT64) else text

    def values(self, dirs: dict[str, str]) -> dict[str, str]:
        """{"<dir key> <file>": value} of memory.min/low (and high of containers)."""
        out = {}
        for key, parent in dirs.items():
            names = ("memory.min", "memory.low") + (
                ("memory.high",) if key.endswith("container") else ())
            for name in names:
                out[f"{key} {name}"] = self.read(parent, name)
        return out


def test_memory_qos_follows_node_slo_within_one_reconcile_interval(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    (node,) = srv.add_nodes(1, prefix="memqos-", cpu="4", memory="8Gi")
    _pod(client, node, "ls", "LS", {"memory": "1Gi"}, {"memory": "2Gi"})
    _pod(client, node, "be", "BE", {"kubernetes.io/batch-memory": "512Mi"},
         {"kubernetes.io/batch-memory": "1Gi"})
    ls = wait_for(lambda: _running(client, "ls"), what="LS pod running")
    be = wait_for(lambda: _running(client, "be"), what="BE pod running")
    dirs = {}
    for key, pod, qos in (("ls", ls, "Burstable"), ("be", be, "BestEffort")):
        pod_dir = LAYOUT.pod_dir(qos, pod["metadata"]["uid"])
        dirs[f"{key} pod"] = pod_dir
        dirs[f"{key} container"] = LAYOUT.container_dir(
            pod_dir, pod["status"]["containerStatuses"][0]["containerID"])
    dirs |= {"kubepods": PODS_SLICE, "burstable": BURSTABLE, "besteffort": BESTEFFORT}
    root = tmp_path / "cgroup"
    root.mkdir()
    env = fake_v2_tree(root, [dirs["ls container"], dirs["be container"], BESTEFFORT])
    assert env.v2
    tree = Tree(root)
    k = koordlets(node, f"--cgroup-root-dir={root}", "--feature-gates=CgroupReconcile=true",
                  f"--reconcile-interval-seconds={RECONCILE_INTERVAL}")

    def applied(want: dict[str, str], what: str) -> float:
        """Seconds until the tree shows ``want``; fails naming the files that differ."""
        t0 = time.monotonic()
        try:
            wait_for(lambda: tree.values(dirs) == want,
                     timeout=RECONCILE_INTERVAL + SLACK, interval=0.05, what=what)
        except AssertionError:
            got = tree.values(dirs)
            diff = {f: (got[f], v) for f, v in want.items() if got[f] != v}
            raise AssertionError(f"{what}: (got, want) {diff}; koordlet log:\n"
                                 f"{k.proc.log()[-3000:]}") from None
        return time.monotonic() - t0

    wait_for(lambda: http_ok(k.metrics + "/readyz"), timeout=30,
             what=f"koordlet ready; log:\n{k.proc.log()}")
    # LS: 1Gi request, 2Gi limit; BE: 512Mi batch-memory request, 1Gi limit.
    ls_min, ls_low, ls_throttle = 50, 80, 80
    be_low, be_throttle = 50, 90
    client.create(NODE_SLOS, _node_slo(
        node, {"enable": True, "minLimitPercent": ls_min, "lowLimitPercent": ls_low,
               "throttlingPercent": ls_throttle},
        {"enable": True, "minLimitPercent": 0, "lowLimitPercent": be_low,
         "throttlingPercent": be_throttle}))
    ls_vals = (GI * ls_min // 100, GI * ls_low // 100, _high(GI, 2 * GI, ls_throttle))
    be_vals = (0, 512 * MI * be_low // 100, _high(512 * MI, GI, be_throttle))

    def want(ls: tuple[int, int, str], be: tuple[int, int, str],
             ls_slice_low: int | None = None) -> dict[str, str]:
        """The files' values for the LS and BE pods' (min, low, high); the QoS slices sum the
        pods' request × lowLimitPercent, before a pod's low is raised to its min."""
        out: dict[str, str] = {}
        for key, (mn, low, high) in (("ls", ls), ("be", be)):
            out |= {f"{key} pod memory.min": str(mn), f"{key} pod memory.low": str(low),
                    f"{key} container memory.min": str(mn),
                    f"{key} container memory.low": str(low),
                    f"{key} container memory.high": high}
        slice_low = ls[1] if ls_slice_low is None else ls_slice_low
        return out | {
            "burstable memory.min": str(ls[0]), "burstable memory.low": str(slice_low),
            "besteffort memory.min": str(be[0]), "besteffort memory.low": str(be[1]),
            "kubepods memory.min": str(ls[0] + be[0]),
            "kubepods memory.low": str(slice_low + be[1])}

    first = applied(want(ls_vals, be_vals), "memory QoS of the first NodeSLO")

    # LS: the whole request protected, throttling off; BE unchanged. The pod's and container's
    # low (80 %) is raised to their min (100 %), as upstream; the slice sums the 80 %.
    slo = client.get(NODE_SLOS, node)
    slo["spec"]["resourceQOSStrategy"]["lsClass"]["memoryQOS"].update(
        minLimitPercent=100, throttlingPercent=0)
    client.update(NODE_SLOS, slo)
    ls_vals = (GI, GI, MAX)
    ls_slice_low = GI * ls_low // 100
    second = applied(want(ls_vals, be_vals, ls_slice_low),
                     "LS memory QoS after the NodeSLO update")

    # BE switched off: its pod and container are reset to the none values, the slices follow.
    slo = client.get(NODE_SLOS, node)
    slo["spec"]["resourceQOSStrategy"]["beClass"]["memoryQOS"]["enable"] = False
    client.update(NODE_SLOS, slo)
    disabled = applied(want(ls_vals, (0, 0, MAX), ls_slice_low),
                       "BE memory QoS reset after enable: false")
    print(f"memory QoS applied {first:.2f}s after the NodeSLO was created, followed the "
          f"update after {second:.2f}s, BE reset after {disabled:.2f}s")
