"""Hook results land on REAL cgroup v1 files in a test-owned subtree of /sys/fs/cgroup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from api.runtime.v1alpha1 import api_pb2
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.server import RuntimeHookServer
from koordlet.runtimehooks.testing import BE_LABELS, GI, batch, extended_spec_annotation
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree

UID = "0d3f7a1e-5b2c-4c8e-9a11-000000000001"
POD_DIR = f"kubepods/besteffort/pod{UID}"
CONTAINER_IDS = {"c0": "aaa0", "c1": "bbb1"}


def be_pod(containers: dict[str, dict[str, dict[str, str]]],
           annotations: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {"name": "be-0", "namespace": "default", "uid": UID, "labels": BE_LABELS,
                     "annotations": annotations or {}},
        "spec": {"containers": [{"name": n, "resources": r} for n, r in containers.items()]},
        "status": {"phase": "Running", "qosClass": "BestEffort", "containerStatuses": [
            {"name": n, "containerID": f"containerd://{CONTAINER_IDS[n]}"} for n in containers]},
    }


def read(env, file: str, relative_dir: str) -> int:
    return int(Path(env.path(file, relative_dir)).read_text())


# koordlet.md 11.7's worked examples: (containers, pod shares, pod quota, pod memory).
FULL = {"requests": batch("500", "2Gi"), "limits": batch("500", "2Gi")}
EXAMPLES = [
    ({"c0": FULL}, 512, 50000, 2 * GI),
    ({"c0": FULL, "c1": {"limits": batch("1000", "2Gi")}}, 512, 150000, 4 * GI),
    ({"c0": FULL, "c1": {"requests": batch("500", "2Gi")}}, 1024, -1, -1),
    ({"c0": {"requests": batch("500", "2Gi")}}, 512, -1, -1),
]


@pytest.mark.parametrize(("containers", "shares", "quota", "memory"), EXAMPLES)
def test_reconciler_writes_batchresource_values_to_a_be_pod(
        containers, shares: int, quota: int, memory: int) -> None:
    with real_cgroup_v1_tree() as env:
        dirs = {n: f"{POD_DIR}/{CONTAINER_IDS[n]}" for n in containers}
        for d in dirs.values():
            make_real_cgroup_dir(env, d)
        # Tight leftovers from an earlier spec: the new values must get past them.
        for d in [POD_DIR, *dirs.values()]:
            Path(env.path("cpu.cfs_quota_us", d)).write_text("1000")
        pod = be_pod(containers)
        reconciler = PodReconciler(lambda: [pod], Rules(),
                                   CgroupApplier(env, ResourceUpdateExecutor()))
        assert reconciler.reconcile_once() == []
        kernel_unlimited_memory = read(env, "memory.limit_in_bytes", "")
        expect_memory = kernel_unlimited_memory if memory == -1 else memory
        assert read(env, "cpu.shares", POD_DIR) == shares
        assert read(env, "cpu.cfs_quota_us", POD_DIR) == quota
        assert read(env, "memory.limit_in_bytes", POD_DIR) == expect_memory
        c0 = dirs["c0"]
        assert read(env, "cpu.shares", c0) == 512
        c0_limits = containers["c0"].get("limits")
        assert read(env, "cpu.cfs_quota_us", c0) == (50000 if c0_limits else -1)
        assert read(env, "memory.limit_in_bytes", c0) == (
            2 * GI if c0_limits else kernel_unlimited_memory)


def test_reconciler_sets_oom_score_adj_of_every_process_in_the_container() -> None:
    with real_cgroup_v1_tree() as env:
        container_dir = f"{POD_DIR}/{CONTAINER_IDS['c0']}"
        make_real_cgroup_dir(env, container_dir)
        proc = subprocess.Popen(["sleep", "60"])
        try:
            Path(env.path("cgroup.procs", container_dir)).write_text(str(proc.pid))
            pod = be_pod({"c0": FULL}, {"koordinator.sh/oom-score-adj": "345"})
            applier = CgroupApplier(env, ResourceUpdateExecutor())
            assert PodReconciler(lambda: [pod], Rules(), applier).reconcile_once() == []
            assert Path(f"/proc/{proc.pid}/oom_score_adj").read_text().strip() == "345"
        finally:
            proc.kill()
            proc.wait()


def test_proxy_server_writes_the_pod_cgroup_through_the_executor() -> None:
    with real_cgroup_v1_tree() as env:
        make_real_cgroup_dir(env, POD_DIR)
        servicer = RuntimeHookServer(
            Rules(), apply_updates=CgroupApplier(env, ResourceUpdateExecutor()))
        request = api_pb2.PodSandboxHookRequest(
            pod_meta=api_pb2.PodSandboxMetadata(name="be-0", namespace="default", uid=UID),
            labels=BE_LABELS, cgroup_parent=POD_DIR,
            annotations=extended_spec_annotation({"c0": FULL}))
        response = servicer.PreRunPodSandboxHook(request, None)
        assert response.resources.cpu_quota == 50000
        assert read(env, "cpu.shares", POD_DIR) == 512
        assert read(env, "cpu.cfs_quota_us", POD_DIR) == 50000
        assert read(env, "memory.limit_in_bytes", POD_DIR) == 2 * GI


def test_a_pod_whose_cgroup_is_gone_is_skipped_quietly() -> None:
    with real_cgroup_v1_tree() as env:
        pod = be_pod({"c0": FULL})
        applier = CgroupApplier(env, ResourceUpdateExecutor())
        assert PodReconciler(lambda: [pod], Rules(), applier).reconcile_once() == []
        assert not os.path.exists(os.path.dirname(env.path("cpu.shares", POD_DIR)))
