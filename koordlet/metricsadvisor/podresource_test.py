import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.podresource import PodResourceCollector
from koordlet.metricsadvisor.testing import fake_pods, write_cgroup
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader

T0 = 1_700_000_000.0


def _by(samples, kind):
    return {tuple(s.properties.values()): s.value for s in samples if s.kind == kind}


@pytest.mark.parametrize(
    "version,systemd",
    [(CGROUP_V1, False), (CGROUP_V1, True), (CGROUP_V2, False), (CGROUP_V2, True)],
)
def test_pod_and_container_usage_from_known_counters(tmp_path, version, systemd):
    root = str(tmp_path)
    pods = fake_pods(2, 1, systemd=systemd)
    mem = dict(
        inactive_anon=100, active_anon=200, unevictable=7, inactive_file=1000, active_file=2000
    )
    for p in pods:
        write_cgroup(root, version, p.cgroup_dir, 5_000_000_000, **mem)
        write_cgroup(root, version, p.containers[0].cgroup_dir, 1_000_000_000, **mem)
    collector = PodResourceCollector(CgroupReader(root, version), lambda: pods)

    first = collector.collect(T0)
    assert _by(first, mt.POD_CPU_USAGE) == {}  # first round only primes CPU
    assert _by(first, mt.POD_MEMORY_USAGE)[(pods[0].pod_uid,)] == 307  # anon + unevictable
    # memory with page cache is the PageCacheCollector's, as upstream
    assert {s.kind for s in first} == {mt.POD_MEMORY_USAGE, mt.CONTAINER_MEMORY_USAGE}

    # pod 0 used 1.5 s of CPU in 2 s -> 0.75 cores; its container 0.5 s -> 0.25 cores
    write_cgroup(root, version, pods[0].cgroup_dir, 6_500_000_000, **mem)
    write_cgroup(root, version, pods[0].containers[0].cgroup_dir, 1_500_000_000, **mem)
    second = collector.collect(T0 + 2)
    pod_cpu = _by(second, mt.POD_CPU_USAGE)
    assert pod_cpu[(pods[0].pod_uid,)] == pytest.approx(0.75)
    assert pod_cpu[(pods[1].pod_uid,)] == 0.0
    cid = pods[0].containers[0].container_id
    assert _by(second, mt.CONTAINER_CPU_USAGE)[(cid,)] == pytest.approx(0.25)
    assert _by(second, mt.CONTAINER_MEMORY_USAGE)[(cid,)] == 307


def test_pod_with_unreadable_cgroup_is_skipped(tmp_path):
    root = str(tmp_path)
    pods = fake_pods(2, 0)
    write_cgroup(root, CGROUP_V1, pods[0].cgroup_dir, 1, active_anon=10)
    collector = PodResourceCollector(CgroupReader(root, CGROUP_V1), lambda: pods)
    mem = _by(collector.collect(T0), mt.POD_MEMORY_USAGE)
    assert mem == {(pods[0].pod_uid,): 10.0}


def test_missing_memory_stat_key_is_an_error(tmp_path):
    root = str(tmp_path)
    pods = fake_pods(1, 0)
    write_cgroup(root, CGROUP_V2, pods[0].cgroup_dir, 1)
    path = tmp_path / pods[0].cgroup_dir / "memory.stat"
    path.write_text("anon 1\n")
    with pytest.raises(ValueError):
        CgroupReader(root, CGROUP_V2).read_memory_stat(pods[0].cgroup_dir)
