import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor.pagecache import PageCacheCollector
from koordlet.metricsadvisor.testing import fake_pods, write_cgroup
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader


@pytest.mark.parametrize("version", [CGROUP_V1, CGROUP_V2])
def test_node_pod_and_container_usage_with_page_cache(tmp_path, version):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "meminfo").write_text(
        "MemTotal:       1000 kB\nMemFree:         300 kB\nMemAvailable:    600 kB\n")
    root = str(tmp_path / "cgroup")
    pods = fake_pods(2, 1)
    mem = dict(inactive_anon=100, active_anon=200, unevictable=7, inactive_file=1000,
               active_file=2000)
    write_cgroup(root, version, pods[0].cgroup_dir, 1, **mem)
    write_cgroup(root, version, pods[0].containers[0].cgroup_dir, 1, **mem)
    # pods[1] has no cgroup: skipped, the round goes on
    samples = PageCacheCollector(str(proc), CgroupReader(root, version), lambda: pods).collect(5.0)
    got = {(s.kind, tuple(s.properties.values())): s.value for s in samples}
    assert got == {
        (mt.NODE_MEMORY_USAGE_WITH_PAGE_CACHE, ()): 700 * 1024,  # (MemTotal − MemFree) KiB
        (mt.POD_MEMORY_USAGE_WITH_PAGE_CACHE, (pods[0].pod_uid,)): 3307,
        (mt.CONTAINER_MEMORY_USAGE_WITH_PAGE_CACHE,
         (pods[0].containers[0].container_id,)): 3307,
    }
    assert all(s.timestamp == 5.0 for s in samples)
