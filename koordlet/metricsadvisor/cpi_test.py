"""Container CPI: the round with fake counters (this machine has no PMU to count with), and
the probe's one log line where perf events are unavailable."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metrics import metrics
from koordlet.metricsadvisor.cpi import CPICollector, perf_unavailable
from koordlet.metricsadvisor.framework import ContainerCgroup, PodCgroup
from koordlet.metricsadvisor.nodeinfo import CPUTopology, ProcessorInfo


class FakeCounters:
    def __init__(self, cycles: float, instructions: float) -> None:
        self.values = (cycles, instructions)
        self.closed = False

    def read(self) -> tuple[float, float]:
        return self.values

    def close(self) -> None:
        self.closed = True


class FakeOpener:
    """Counts ``cycles = 1000 × (n + 1)``, ``instructions = 500 × (n + 1)`` for the n-th
    container opened; a path containing ``gone`` fails as a removed cgroup does."""

    def __init__(self) -> None:
        self.opened: list[tuple[str, list[int], FakeCounters]] = []

    def __call__(self, cgroup_path: str, cpus: Sequence[int]) -> FakeCounters:
        if "gone" in cgroup_path:
            raise FileNotFoundError(cgroup_path)
        n = len(self.opened) + 1
        counters = FakeCounters(1000.0 * n, 500.0 * n)
        self.opened.append((cgroup_path, list(cpus), counters))
        return counters


def _cpi() -> dict[tuple[str, str, str], float]:
    return {(s.labels["pod_name"], s.labels["container_name"], s.labels["cpi_field"]): s.value
            for family in metrics.EXTERNAL.collect() for s in family.samples
            if s.name == "koordlet_container_cpi" and s.labels["node"] == "node-cpi"}


@pytest.fixture()
def node_name() -> Iterator[None]:
    registered = metrics.node_name()
    metrics.register("node-cpi")
    yield
    metrics.reset_container_cpi()
    metrics.register(registered)


def test_a_round_exports_each_containers_cycles_and_instructions(node_name: None) -> None:
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY,
              CPUTopology([ProcessorInfo(i, i, 0, 0, "", 0) for i in (1, 0, 3, 2)]))
    pods = [PodCgroup("uid-1", "kubepods/pod1", (
        ContainerCgroup("containerd://a", "kubepods/pod1/a", "app"),
        ContainerCgroup("containerd://b", "kubepods/pod1/gone", "sidecar")), "web", "default")]
    opener = FakeOpener()
    collector = CPICollector(cache, lambda: pods, "/cg/perf_event", time_window_seconds=0,
                             opener=opener)
    collector.collect_once(threading.Event())
    [(path, cpus, counters)] = opener.opened
    assert (path, cpus, counters.closed) == ("/cg/perf_event/kubepods/pod1/a", [0, 1, 2, 3], True)
    assert _cpi() == {("web", "app", "cycles"): 1000.0, ("web", "app", "instructions"): 500.0}
    [sample] = [s for f in metrics.EXTERNAL.collect() for s in f.samples
                if s.name == "koordlet_container_cpi" and s.labels["cpi_field"] == "cycles"
                and s.labels["node"] == "node-cpi"]
    assert sample.labels == {"node": "node-cpi", "container_id": "containerd://a",
                             "container_name": "app", "pod_uid": "uid-1", "pod_name": "web",
                             "pod_namespace": "default", "cpi_field": "cycles"}

    pods.clear()  # the next round resets the series first
    collector.collect_once(threading.Event())
    assert _cpi() == {}


def test_a_stop_within_the_window_records_nothing_and_closes(node_name: None) -> None:
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY, CPUTopology([ProcessorInfo(0, 0, 0, 0, "", 0)]))
    pods = [PodCgroup("uid-1", "p", (ContainerCgroup("containerd://a", "p/a", "app"),),
                      "web", "default")]
    opener = FakeOpener()
    stop = threading.Event()
    stop.set()
    CPICollector(cache, lambda: pods, "/cg", opener=opener).collect_once(stop)
    assert _cpi() == {} and opener.opened[0][2].closed


def test_without_perf_events_one_line_and_nothing_collected(
        node_name: None, caplog: pytest.LogCaptureFixture) -> None:
    opener = FakeOpener()
    collector = CPICollector(MetricCache(), lambda: [], "/cg", opener=opener,
                             probe=lambda: "No such file or directory (perf_event_paranoid=2)")
    with caplog.at_level(logging.INFO, logger="koordlet.metricsadvisor.cpi"):
        collector.run(threading.Event())  # returns at once: nothing to wait for
    assert [r.getMessage() for r in caplog.records] == [
        "CPICollector: no hardware perf events on this node (No such file or directory "
        "(perf_event_paranoid=2)), koordlet_container_cpi is not collected"]
    assert opener.opened == [] and _cpi() == {}


def test_the_probe_on_this_machine_names_its_reason() -> None:
    reason = perf_unavailable()
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid")
    if reason is not None and paranoid.exists():
        assert reason.endswith(f"(perf_event_paranoid={paranoid.read_text().strip()})")
