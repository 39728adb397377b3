"""A fake cgroup v1 tree of plain files for simulated nodes (no upstream counterpart: upstream
always runs on a real node's `/sys/fs/cgroup`, whose layout `pkg/koordlet/util/system`
describes; this lays out the same relative dirs as `cgroup_driver`, with the cgroupfs driver).

`ensure_fake_v1_tree(root, cpus)` creates, when `root` holds no cgroup tree yet, the `cpu`,
`cpuacct`, `cpuset` and `memory` subsystems with `kubepods/`, `kubepods/burstable/` and
`kubepods/besteffort/`, each with the files a fresh cgroup has (`cpu.cfs_quota_us=-1`,
`cpu.cfs_period_us=100000`, `cpu.shares`, `cpuset.cpus`, `memory.limit_in_bytes`, ...), the
memory subsystem with an Anolis kernel's memcg QoS files (`memory.min`/`low`/`high`, wmark,
priority, `memory.oom.group`), so memory QoS is written as on such a node.
`ensure_pod_dirs(env, pods)` adds the pod (and container) dirs of running pods, so qosmanager and
runtime hooks write real files there. `fake_v1_env(root)` is the tree's `CgroupEnv`, for a
koordlet that builds its modules before it knows the node's cores to lay the tree out with.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from api.extension.qos import KubeQoSClass, get_kube_qos_class
from koordlet.util.system.cgroup_driver import (
    CgroupDriver,
    container_relative_dir,
    kube_qos_relative_dir,
    pod_relative_dir,
)
from koordlet.util.system.cgroup_env import CgroupEnv

SUBSYSTEMS = ("cpu", "cpuacct", "cpuset", "memory")
# The kernel's "no limit" for memory.limit_in_bytes on 4 KiB pages.
MEMORY_UNLIMITED = 9223372036854771712
# The memcg QoS files an Anolis / Alibaba Cloud Linux kernel adds to each v1 memory cgroup, with
# a fresh cgroup's values: the simulated nodes run such a kernel, so CgroupReconcile (memory
# QoS) has its files, as on upstream's reference nodes.
ANOLIS_MEMCG_FILES = {
    "memory.min": "0", "memory.low": "0", "memory.high": str(MEMORY_UNLIMITED),
    "memory.wmark_ratio": "0", "memory.wmark_scale_factor": "50", "memory.wmark_min_adj": "0",
    "memory.priority": "0", "memory.use_priority_oom": "0", "memory.oom.group": "0",
}
ROOT_SHARES = 1024
MIN_SHARES = 2  # kubelet's shares for the BestEffort QoS dir


def has_cgroup_tree(root: str) -> bool:
    return os.path.isfile(os.path.join(root, "cgroup.controllers")) or os.path.isdir(
        os.path.join(root, "cpu"))


def _files(cpus: int, shares: int) -> dict[str, dict[str, str]]:
    return {
        "cpu": {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
                "cpu.shares": str(shares), "cpu.stat": "nr_periods 0\nnr_throttled 0\n"
                "throttled_time 0"},
        "cpuacct": {"cpuacct.usage": "0"},
        "cpuset": {"cpuset.cpus": f"0-{cpus - 1}" if cpus > 1 else "0", "cpuset.mems": "0"},
        "memory": {"memory.limit_in_bytes": str(MEMORY_UNLIMITED), "memory.stat": "",
                   **ANOLIS_MEMCG_FILES},
    }


def _make_dir(root: str, relative_dir: str, cpus: int, shares: int) -> None:
    for subsystem, files in _files(cpus, shares).items():
        path = os.path.join(root, subsystem, relative_dir)
        if os.path.isdir(path):
            continue
        os.makedirs(path)
        for name, content in files.items():
            with open(os.path.join(path, name), "w") as f:
                f.write(content + "\n")


def fake_v1_env(root: str, prefix: str = "") -> CgroupEnv:
    """The `CgroupEnv` of the tree `ensure_fake_v1_tree` lays out, known before it exists."""
    return CgroupEnv(root=root, v2=False, driver=CgroupDriver.CGROUPFS, prefix=prefix)


def ensure_fake_v1_tree(root: str, cpus: int) -> bool:
    """Lays out the tree unless `root` already holds one; True when it was created."""
    if has_cgroup_tree(root):
        return False
    driver = CgroupDriver.CGROUPFS
    _make_dir(root, "", cpus, ROOT_SHARES)
    _make_dir(root, kube_qos_relative_dir(driver, KubeQoSClass.GUARANTEED), cpus,
              cpus * ROOT_SHARES)
    _make_dir(root, kube_qos_relative_dir(driver, KubeQoSClass.BURSTABLE), cpus, MIN_SHARES)
    _make_dir(root, kube_qos_relative_dir(driver, KubeQoSClass.BEST_EFFORT), cpus, MIN_SHARES)
    return True


def ensure_pod_dirs(env: CgroupEnv, pods: Iterable[dict[str, Any]], cpus: int) -> None:
    """Pod and container dirs for each Running pod; existing dirs are left as they are."""
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            continue
        pod_dir = pod_relative_dir(env.driver, get_kube_qos_class(pod), pod["metadata"]["uid"])
        _make_dir(env.root, os.path.join(env.prefix, pod_dir), cpus, MIN_SHARES)
        for cs in status.get("containerStatuses") or []:
            if cs.get("containerID"):
                container_dir = container_relative_dir(env.driver, pod_dir, cs["containerID"])
                _make_dir(env.root, os.path.join(env.prefix, container_dir), cpus, MIN_SHARES)
