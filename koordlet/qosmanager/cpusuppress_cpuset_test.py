"""cpusuppress `cpuset` policy (upstream `adjustByCPUSet` and `calculateBESuppressCPUSetPolicy` of
`pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go`) on a fake cgroup v2 tree: the CPU
choice, the exclusions, the files written and the recovery when the policy switches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from koordlet.audit import auditor as audit
from koordlet.audit.event_log import ReverseEventIterator
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metrics.metrics import BE_SUPPRESS_CPU_CORES
from koordlet.metricsadvisor.nodeinfo import CPUTopology, ProcessorInfo
from koordlet.qosmanager.cpuset_policy import be_cpuset_size, select_be_cpus
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node, node_slo, pod
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock


def _two_sockets() -> list[ProcessorInfo]:
    """2 sockets × 4 cores × 2 threads; the siblings of cpu c are c and c + 8."""
    return [
        ProcessorInfo(cpu, (cpu % 8) % 4, (cpu % 8) // 4, (cpu % 8) // 4, "", 0)
        for cpu in range(16)
    ]


def test_whole_cores_round_robin_over_sockets_then_single_cpus() -> None:
    # socket 0 gives core 0 (0, 8), socket 1 core 4 (4, 12), then one more CPU from socket 0
    assert select_be_cpus(5, _two_sockets()) == [0, 1, 4, 8, 12]
    assert select_be_cpus(4, _two_sockets()) == [0, 4, 8, 12]
    assert select_be_cpus(17, _two_sockets()) == []


def test_size_at_least_two_and_grows_by_ten_percent_of_processors() -> None:
    assert be_cpuset_size(300, 8, 16) == 2
    assert be_cpuset_size(2100, 8, 16) == 3
    assert be_cpuset_size(15000, 4, 16) == 6  # 4 + ceil(1.6)


def _lse_lsr(uid: str, qos: str, cpuset: str) -> dict:
    p = pod(uid, qos, "Guaranteed")
    p["metadata"]["annotations"] = {
        "scheduling.koordinator.sh/resource-status": json.dumps({"cpuset": cpuset})
    }
    return p


@pytest.mark.parametrize("annotations", [
    {},
    # Malformed node annotations count as absent: they turned the cpuset policy off.
    {"node.koordinator.sh/reservation": '{"reservedCPUs": "1-"}',
     "node.koordinator.sh/system-qos-resource": "{not json"},
], ids=["plain", "malformed-node-annotations"])
def test_cpuset_policy_writes_be_tree_and_recovers_on_switch(tmp_path: Path,
                                                             annotations: dict) -> None:
    env = fake_v2_tree(tmp_path, [])
    be_pod_dir = env.pod_dir("BestEffort", "be1")
    container_dir = env.container_dir(be_pod_dir, "cri-containerd-abc.scope")
    fake_v2_tree(tmp_path, [container_dir])
    clock = FakeClock(1000.0)
    cache = MetricCache()
    # 8 CPUs, 4 cores: siblings (0, 4), (1, 5), (2, 6), (3, 7)
    cache.set(mt.NODE_CPU_INFO_KEY,
              CPUTopology([ProcessorInfo(i, i % 4, 0, 0, "", 0) for i in range(8)]))
    n = node("8")
    n["metadata"]["annotations"] = annotations
    states = FakeStates(
        node=n,
        node_slo=node_slo(True, policy="cpuset"),
        pods=[
            pod("ls", "LS", "Burstable"),
            _lse_lsr("lse", "LSE", "3,7"),
            _lse_lsr("lsr", "LSR", "0,4"),
            pod("be1", "BE", "BestEffort"),
        ],
    )
    ctx = Context(env=env, executor=ResourceUpdateExecutor(clock), metric_cache=cache,
                  states=states, feature_gate=koordlet_feature_gate.copy(), clock=clock)
    plugin = CPUSuppress(ctx)
    now = clock.now()
    cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, now, 2.7),
                  MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: "ls"}, now, 2.7)])
    audit.setup(audit.Config(audit_log_dir=str(tmp_path / "audit")))
    try:
        plugin.run_once()
        event = ReverseEventIterator(str(tmp_path / "audit")).next()
    finally:
        audit.reset()
    # allowance 5200m − 2700m = 2500m → 3 CPUs out of {0,1,2,4,5,6} (LSE 3,7 excluded):
    # 3 × 2 LSR CPUs / 6 = 1 from LSR {0,4} → 0; 2 from {1,2,5,6} → the whole core (1, 5)
    files = [tmp_path / d / "cpuset.cpus" for d in (env.be_dir(), be_pod_dir, container_dir)]
    assert [f.read_text().strip() for f in files] == ["0-1,5"] * 3
    # As upstream's audit message, Go's %v of the []int32 it applied.
    assert event is not None and (event.reason, event.message) == (
        "AdjustBEByNodeCPUUsage", "update BE group to cpuset: [0 1 5]")
    assert BE_SUPPRESS_CPU_CORES.labels("", "cpuset")._value.get() == 3
    assert (tmp_path / env.be_dir() / "cpu.max").read_text().split()[0] == "max"

    states.node_slo = node_slo(True, policy="cfsQuota")
    plugin.run_once()
    assert [f.read_text().strip() for f in files] == ["0-2,4-6"] * 3  # full BE cpuset
    assert (tmp_path / env.be_dir() / "cpu.max").read_text().split()[0] == "250000"
