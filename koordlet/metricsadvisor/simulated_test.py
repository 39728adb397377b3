import json
import logging
import math
import re

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metricsadvisor.nodeinfo import NUMAInfo
from koordlet.metricsadvisor.simulated import (
    ANNOTATION_SYSTEM_USAGE,
    ANNOTATION_USAGE,
    Curve,
    SimulatedCollector,
    SimulatedNodeInfoCollector,
    UsageError,
    parse_usage,
)

GI = 1024**3


def pod(uid: str, usage: str | None, *, qos: str | None = None, limits: list | None = None,
        phase: str = "Running") -> dict:
    containers = [{"name": f"c{i}", "resources": {"limits": lim}}
                  for i, lim in enumerate(limits or [{}])]
    meta: dict = {"uid": uid, "name": uid, "namespace": "default", "labels": {},
                  "annotations": {}}
    if usage is not None:
        meta["annotations"][ANNOTATION_USAGE] = usage
    if qos:
        meta["labels"]["koordinator.sh/qosClass"] = qos
    return {"metadata": meta, "spec": {"containers": containers},
            "status": {"phase": phase, "qosClass": "Burstable"}}


def test_diurnal_curve_peaks_at_epoch_plus_peak_at_and_troughs_half_a_period_later() -> None:
    c = Curve(base=1.0, peak=3.0, period_seconds=100, peak_at_seconds=10, epoch=1000)
    assert c.at(1010) == pytest.approx(3.0)
    assert c.at(1060) == pytest.approx(1.0)
    assert c.at(1035) == pytest.approx(2.0)  # a quarter period: halfway
    assert c.at(1110) == pytest.approx(3.0)
    cpu, memory = parse_usage(json.dumps({"cpu": {"base": "500m", "peak": "1500m",
                                                  "periodSeconds": 60, "peakAtSeconds": 0},
                                          "memory": "1Gi"}))
    assert cpu.at(0) == pytest.approx(1.5) and cpu.at(30) == pytest.approx(0.5)
    assert memory.at(12345) == GI
    assert parse_usage('{"memory": "2Mi"}')[0].at(5) == 0  # missing key: 0
    for bad in ("not json", '["cpu"]', '{"cpu": "lots"}', '{"cpu": {"base": "1"}}',
                '{"cpu": {"base": "1", "peak": "2", "periodSeconds": 0}}', '{"cpu": "-1"}'):
        with pytest.raises(UsageError):
            parse_usage(bad)


def test_usage_is_capped_by_limits_and_be_quota_and_summed_onto_system_usage(
        caplog: pytest.LogCaptureFixture) -> None:
    pods = [
        # LS pod using 2 cores with a 1-core limit: capped to 1.
        pod("ls", '{"cpu": "2", "memory": "1Gi"}', limits=[{"cpu": "500m"}, {"cpu": "500m"}]),
        # LS pod: one container without a limit, so no cap.
        pod("ls-nolimit", '{"cpu": "1500m"}', limits=[{"cpu": "500m"}, {}]),
        # BE pods (label; batch-cpu limit in millicores) 2 + 1 cores, BE quota 1.5 cores.
        pod("be-a", '{"cpu": "2", "memory": "512Mi"}', qos="BE",
            limits=[{"kubernetes.io/batch-cpu": "4000"}]),
        pod("be-b", '{"cpu": "1"}', qos="BE"),
        pod("broken", '{"cpu": oops}'),
        pod("done", '{"cpu": "8"}', phase="Succeeded"),
    ]
    node = {"metadata": {"name": "sim-0", "annotations": {
        ANNOTATION_SYSTEM_USAGE: '{"cpu": "250m", "memory": "1Gi"}'}}}
    quota: list[float | None] = [1.5]
    collector = SimulatedCollector(lambda: pods, lambda: node, lambda: quota[0])
    with caplog.at_level(logging.WARNING):
        samples = collector.collect(100.0)
        collector.collect(101.0)
    warnings = [r.getMessage() for r in caplog.records if "broken" in r.getMessage()]
    assert len(warnings) == 1 and ANNOTATION_USAGE in warnings[0]

    def value(kind: str, uid: str | None = None) -> float:
        props = {mt.POD_UID: uid} if uid else {}
        (v,) = [s.value for s in samples if s.kind == kind and dict(s.properties) == props]
        return v

    assert value(mt.POD_CPU_USAGE, "ls") == 1.0
    assert value(mt.POD_CPU_USAGE, "ls-nolimit") == 1.5
    assert value(mt.POD_CPU_USAGE, "be-a") == pytest.approx(1.0)
    assert value(mt.POD_CPU_USAGE, "be-b") == pytest.approx(0.5)
    assert value(mt.POD_CPU_USAGE, "broken") == 0
    assert not [s for s in samples if dict(s.properties) == {mt.POD_UID: "done"}]
    assert value(mt.POD_MEMORY_USAGE, "be-a") == 512 * 1024**2
    assert value(mt.NODE_CPU_USAGE) == pytest.approx(0.25 + 1.0 + 1.5 + 1.5)
    assert value(mt.NODE_MEMORY_USAGE) == 2 * GI + 512 * 1024**2
    assert value(mt.SYS_CPU_USAGE) == 0.25 and value(mt.SYS_MEMORY_USAGE) == GI
    # The quota lifted (-1): BE pods use what they ask for.
    quota[0] = None
    samples = collector.collect(102.0)
    assert value(mt.POD_CPU_USAGE, "be-a") == 2.0
    assert math.isclose(value(mt.NODE_CPU_USAGE), 0.25 + 1.0 + 1.5 + 3.0)


def test_simulated_topology_has_the_node_capacity_in_cpus() -> None:
    """cpusuppress and the cpuset rules read the node's CPU topology; a simulated node has its
    declared CPUs, not this machine's."""
    cache = MetricCache()
    node: dict = {}
    collector = SimulatedNodeInfoCollector(cache, lambda: node)
    collector.collect(0.0)
    assert cache.get(mt.NODE_CPU_INFO_KEY) is None  # node not known yet
    node.update({"status": {"capacity": {"cpu": "16", "memory": "64Gi"}}})
    collector.collect(1.0)
    topo = cache.get(mt.NODE_CPU_INFO_KEY)
    assert topo is not None
    assert [p.cpu_id for p in topo.processors] == list(range(16))
    assert len(topo.cores()) == 16 and topo.sockets() == {0} and topo.numa_nodes() == {0}
    assert cache.get(mt.NODE_NUMA_INFO_KEY) == [NUMAInfo(0, 64 * GI)]


@pytest.mark.parametrize(("raw", "why"), [
    # Reported as usage, cpu 1e30 made a NodeMetric every consumer had to refuse.
    ('{"cpu": "1e30"}', "cpu: cpu quantity '1e30' is beyond Kubernetes' int64 range"),
    ('{"cpu": {"base": "1", "peak": "1e30"}}', "cpu.peak: cpu quantity '1e30' is beyond"),
    ('{"memory": "1e30"}', "memory: memory quantity '1e30' is beyond"),
    # json.loads raised RecursionError (not UsageError) out of the collector.
    ('{"cpu": ' + "[" * 5000 + "]" * 5000 + "}", "not JSON: JSON nested more than 100 levels"),
], ids=["cpu-1e30", "peak-1e30", "memory-1e30", "nested-5000-deep"])
def test_absurd_or_deeply_nested_usage_is_refused(raw: str, why: str) -> None:
    with pytest.raises(UsageError, match=re.escape(why)):
        parse_usage(raw)
