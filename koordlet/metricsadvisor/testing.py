"""Fake cgroup trees for collector tests and the bench (not a test module, so Bazel tests and
``koordlet.bench`` can import it)."""

from __future__ import annotations

import os

from koordlet.metricsadvisor.framework import ContainerCgroup, PodCgroup
from koordlet.resourceexecutor.reader import CGROUP_V2

_V1_MEMORY_STAT = """cache {cache}
rss {rss}
rss_huge 0
shmem 0
mapped_file 0
dirty 0
writeback 0
pgpgin 1000
pgpgout 900
pgfault 5000
pgmajfault 0
inactive_anon {ia}
active_anon {aa}
inactive_file {if_}
active_file {af}
unevictable {ue}
hierarchical_memory_limit 9223372036854771712
total_cache {cache}
total_rss {rss}
total_rss_huge 0
total_shmem 0
total_mapped_file 0
total_dirty 0
total_writeback 0
total_pgpgin 1000
total_pgpgout 900
total_pgfault 5000
total_pgmajfault 0
total_inactive_anon {ia}
total_active_anon {aa}
total_inactive_file {if_}
total_active_file {af}
total_unevictable {ue}
"""

_V2_MEMORY_STAT = """anon {rss}
file {cache}
kernel_stack 0
sock 0
shmem 0
file_mapped 0
file_dirty 0
inactive_anon {ia}
active_anon {aa}
inactive_file {if_}
active_file {af}
unevictable {ue}
slab_reclaimable 0
pgfault 5000
"""


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def write_cgroup(
    root: str,
    version: int,
    cgroup_dir: str,
    cpu_usage_ns: int,
    inactive_anon: int = 0,
    active_anon: int = 0,
    unevictable: int = 0,
    inactive_file: int = 0,
    active_file: int = 0,
) -> None:
    """Writes the CPU and memory files of one cgroup with the given counters."""
    mem = dict(
        ia=inactive_anon,
        aa=active_anon,
        ue=unevictable,
        if_=inactive_file,
        af=active_file,
        rss=inactive_anon + active_anon,
        cache=inactive_file + active_file,
    )
    if version == CGROUP_V2:
        d = os.path.join(root, cgroup_dir)
        _write(
            os.path.join(d, "cpu.stat"),
            f"usage_usec {cpu_usage_ns // 1000}\nuser_usec 0\nsystem_usec 0\n"
            "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n",
        )
        _write(os.path.join(d, "memory.stat"), _V2_MEMORY_STAT.format(**mem))
        return
    _write(os.path.join(root, "cpuacct", cgroup_dir, "cpuacct.usage"), f"{cpu_usage_ns}\n")
    _write(os.path.join(root, "memory", cgroup_dir, "memory.stat"), _V1_MEMORY_STAT.format(**mem))


def fake_pods(n_pods: int, n_containers: int, systemd: bool = False) -> list[PodCgroup]:
    """Burstable pods with containerd containers, in the systemd or cgroupfs layout."""
    pods = []
    for i in range(n_pods):
        uid = f"{i:08d}-0000-4000-8000-000000000000"
        if systemd:
            base = "kubepods.slice/kubepods-burstable.slice"
            pod_dir = f"{base}/kubepods-burstable-pod{uid.replace('-', '_')}.slice"
        else:
            pod_dir = f"kubepods/burstable/pod{uid}"
        containers = []
        for j in range(n_containers):
            cid = f"{i:032x}{j:032x}"
            c_dir = f"{pod_dir}/cri-containerd-{cid}.scope" if systemd else f"{pod_dir}/{cid}"
            containers.append(ContainerCgroup(f"containerd://{cid}", c_dir))
        pods.append(PodCgroup(uid, pod_dir, tuple(containers)))
    return pods
