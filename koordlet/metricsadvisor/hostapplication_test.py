"""HostApplicationCollector, mirroring upstream's ``host_app_collector_test.go`` cases, on
fake v1 and v2 trees laid out under a temp dir as the kernel does."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metrics import metrics
from koordlet.metricsadvisor.hostapplication import HostAppCgroup, HostApplicationCollector
from koordlet.metricsadvisor.podsource import host_app_cgroups
from koordlet.metricsadvisor.testing import write_cgroup
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader
from koordlet.statesinformer.states_informer import PodMeta
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv

T0 = 1_700_000_000.0
MI = 1 << 20
APP_DIR = "kubepods.slice/kubepods-besteffort.slice/test-host-app"
APP = HostAppCgroup("test-host-app", APP_DIR)


def write_app(root: str, version: int, cgroup_dir: str = APP_DIR, cpu_ns: int = 10**9,
              usage: str = str(200 * MI)) -> None:
    """100 MiB inactive anon and 100 MiB inactive file; ``usage`` is the page-cache-inclusive
    file (``memory.usage_in_bytes`` on v1, ``memory.current`` on v2)."""
    write_cgroup(root, version, cgroup_dir, cpu_ns, inactive_anon=100 * MI,
                 inactive_file=100 * MI)
    usage_file = (f"{root}/memory/{cgroup_dir}/memory.usage_in_bytes" if version == CGROUP_V1
                  else f"{root}/{cgroup_dir}/memory.current")
    with open(usage_file, "w") as f:
        f.write(usage + "\n")


def values(samples: list) -> dict[tuple[str, str], float]:
    return {(s.kind, s.properties[mt.HOST_APP_NAME]): s.value for s in samples}


@pytest.mark.parametrize("version", [CGROUP_V1, CGROUP_V2])
def test_first_round_primes_then_cpu_memory_and_page_cache_are_stored(tmp_path, version):
    root = str(tmp_path)
    write_app(root, version, cpu_ns=0)
    collector = HostApplicationCollector(CgroupReader(root, version), lambda: [APP])
    assert collector.collect(T0) == []  # upstream "ignore first cpu": nothing at all
    write_app(root, version, cpu_ns=10**9)  # 1 s of CPU in 1 s
    assert values(collector.collect(T0 + 1)) == {
        (mt.HOST_APPLICATION_CPU_USAGE, "test-host-app"): 1.0,
        (mt.HOST_APPLICATION_MEMORY_USAGE, "test-host-app"): 100 * MI,
        (mt.HOST_APPLICATION_MEMORY_USAGE_WITH_PAGE_CACHE, "test-host-app"): 200 * MI,
    }


@pytest.mark.parametrize("broken", ["cpuacct.usage", "memory.stat", "memory.usage_in_bytes"])
def test_app_with_an_unreadable_file_is_skipped_and_others_still_collected(tmp_path, broken):
    """Upstream's "bad cpu / memory stat / memory usage format" cases, next to a good app."""
    root = str(tmp_path)
    other = HostAppCgroup("nginx", "host-latency-sensitive/nginx")
    for app in (APP, other):
        write_app(root, CGROUP_V1, app.cgroup_dir, cpu_ns=0)
    collector = HostApplicationCollector(CgroupReader(root, CGROUP_V1), lambda: [APP, other])
    collector.collect(T0)
    for app in (APP, other):
        write_app(root, CGROUP_V1, app.cgroup_dir)
    subsystem = {"cpuacct.usage": "cpuacct"}.get(broken, "memory")
    (tmp_path / subsystem / APP_DIR / broken).write_text("bad format\n")
    got = values(collector.collect(T0 + 1))
    assert {name for _, name in got} == {"nginx"}


def test_no_node_slo_stores_nothing_and_says_so(tmp_path, caplog):
    collector = HostApplicationCollector(CgroupReader(str(tmp_path), CGROUP_V1), lambda: None)
    with caplog.at_level(logging.WARNING):
        assert collector.collect(T0) == []
    assert "no NodeSLO" in caplog.text


def test_gone_app_is_forgotten_after_expiry(tmp_path):
    root = str(tmp_path)
    write_app(root, CGROUP_V1)
    apps = [APP]
    collector = HostApplicationCollector(CgroupReader(root, CGROUP_V1), lambda: apps)
    collector.collect(T0)
    apps.clear()
    collector.collect(T0 + 601)  # GC: the reading is older than 20 intervals
    apps.append(APP)
    assert collector.collect(T0 + 602) == []  # primes again: no rate across the gap


@dataclass
class _Raw:
    slo: dict[str, Any] | None
    node_name: str = "node-a"
    pods: list[PodMeta] = field(default_factory=list)

    def get_node(self) -> dict[str, Any] | None:
        return None

    def get_node_slo(self) -> dict[str, Any] | None:
        return self.slo

    def get_all_pods(self) -> list[PodMeta]:
        return self.pods


def test_source_resolves_dirs_by_driver_and_prefix() -> None:
    slo = {"metadata": {"name": "node-a", "resourceVersion": "1"}, "spec": {"hostApplications": [
        {"name": "test-host-app", "qos": "BE",
         "cgroupPath": {"base": "KubepodsBesteffort", "relativePath": "test-host-app/"}},
        {"name": "nginx", "qos": "LS"},
    ]}}
    env = CgroupEnv(root="/unused", driver=CgroupDriver.SYSTEMD, prefix="koord-test")
    assert host_app_cgroups(env, StatesView(_Raw(slo))) == [
        HostAppCgroup("test-host-app", f"koord-test/{APP_DIR}", qos="BE"),
        HostAppCgroup("nginx", "koord-test/host-latency-sensitive/nginx", qos="LS"),
    ]
    assert host_app_cgroups(env, StatesView(_Raw(None))) is None


def gauge(name: str, resource: str) -> float | None:
    return metrics.INTERNAL.get_sample_value("koordlet_host_application_resource_usage", {
        "node": metrics.node_name(), "host_application_name": name, "resource": resource,
        "priority_class": "koord-batch", "qos": "BE"})


def test_usage_gauge_per_app_and_an_app_gone_from_node_slo_is_dropped(tmp_path) -> None:
    root = str(tmp_path)
    write_app(root, CGROUP_V1, cpu_ns=0)
    app = HostAppCgroup("gauge-app", APP_DIR, "koord-batch", "BE")
    apps = [app]
    collector = HostApplicationCollector(CgroupReader(root, CGROUP_V1), lambda: apps)
    collector.collect(T0)
    write_app(root, CGROUP_V1, cpu_ns=5 * 10**8)
    collector.collect(T0 + 1)
    assert (gauge("gauge-app", "cpu"), gauge("gauge-app", "memory")) == (0.5, 100 * MI)
    apps.clear()
    collector.collect(T0 + 2)
    assert gauge("gauge-app", "cpu") is None
