"""Hook results land on REAL cgroup v1 files in a test-owned subtree of /sys/fs/cgroup."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import api.runtime.v1alpha1.api_pb2 as api_pb2
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.hooks.batchresource import BatchResourceRule, batch_resource
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.server import RuntimeHookServer
from koordlet.runtimehooks.testing import (
    BATCH_POD_CASES,
    BE_LABELS,
    GI,
    batch,
    extended_spec_annotation,
    hook_request,
)
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


FULL = {"requests": batch("500", "2Gi"), "limits": batch("500", "2Gi")}


def read(env, file: str, relative_dir: str) -> int:
    return int(Path(env.path(file, relative_dir)).read_text())


@pytest.mark.parametrize(("containers", "ratio", "suppress", "shares", "quota", "memory"),
                         BATCH_POD_CASES)
def test_reconciler_writes_batchresource_values_to_a_be_pod(
        containers, ratio: float, suppress: bool, shares: int, quota: int, memory: int) -> None:
    """Every pod spec of the batchresource table, written by the reconciler onto real cgroups:
    the pod dir gets exactly the table's shares/quota/memory (-1 memory = the kernel's
    unlimited value), and the first container its own values."""
    with real_cgroup_v1_tree() as env:
        dirs = {n: f"{POD_DIR}/{CONTAINER_IDS[n]}" for n in containers}
        for d in dirs.values():
            make_real_cgroup_dir(env, d)
        # Tight leftovers from an earlier spec: the new values must get past them.
        for d in [POD_DIR, *dirs.values()]:
            Path(env.path("cpu.cfs_quota_us", d)).write_text("1000")
        pod = be_pod(containers)
        rules = Rules(batch_resource=BatchResourceRule(not suppress, ratio))
        reconciler = PodReconciler(lambda: [pod], rules,
                                   CgroupApplier(env, ResourceUpdateExecutor()))
        assert reconciler.reconcile_once() == []
        kernel_unlimited_memory = read(env, "memory.limit_in_bytes", "")
        expect_memory = kernel_unlimited_memory if memory == -1 else memory
        assert read(env, "cpu.shares", POD_DIR) == shares
        assert read(env, "cpu.cfs_quota_us", POD_DIR) == quota
        assert read(env, "memory.limit_in_bytes", POD_DIR) == expect_memory
        # The container level gets what the hook computes for it (its table: the hook's tests).
        want = batch_resource(hook_request(containers, container="c0"), rules)
        assert read(env, "cpu.shares", dirs["c0"]) == want.cpu_shares
        assert read(env, "cpu.cfs_quota_us", dirs["c0"]) == want.cfs_quota
        assert read(env, "memory.limit_in_bytes", dirs["c0"]) == (
            kernel_unlimited_memory if want.memory_limit == -1 else want.memory_limit)


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
