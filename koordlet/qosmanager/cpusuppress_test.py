"""cpusuppress formula and cfsQuota steps on a fake cgroup v2 tree (upstream
`pkg/koordlet/qosmanager/plugins/cpusuppress/cpu_suppress.go`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.slo.v1alpha1.host_application import HostApplicationSpec
from api.slo.v1alpha1.strategies import ResourceThresholdStrategy
from koordlet.audit import auditor as audit
from koordlet.audit.event_log import ReverseEventIterator
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.nodeinfo import CPUTopology, ProcessorInfo
from koordlet.qosmanager.cpusuppress import (
    CPUSuppress,
    SuppressInputs,
    calculate_be_suppress_cpu,
    is_be_pod,
    pods_used_milli,
)
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node, node_slo, pod
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import fake_v2_tree
from pkg.events import EventBroadcaster
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock


def test_formula_subtracts_non_be_pods_host_apps_and_system() -> None:
    inputs = SuppressInputs(
        capacity_milli=10000,
        reserved_milli=0,
        node_used_milli=6000,
        pods_all_milli=5000,
        pods_non_be_milli=3000,
        host_all_milli=500,
        host_non_be_milli=200,
    )
    strategy = ResourceThresholdStrategy(cpu_suppress_threshold_percent=65)
    # system = 6000 − 5000 − 500 = 500; 6500 − 3000 − 200 − 500
    assert calculate_be_suppress_cpu(inputs, strategy) == 2800


def test_system_is_floored_at_reservation_and_min_percent_applies() -> None:
    inputs = SuppressInputs(10000, 1500, 6000, 6000, 6000, 0, 0)
    assert inputs.system_milli() == 1500
    strategy = ResourceThresholdStrategy(
        cpu_suppress_threshold_percent=65, cpu_suppress_min_percent=10
    )
    assert calculate_be_suppress_cpu(inputs, strategy) == 1000  # 6500−6000−1500 < 10 %


def test_dangling_pod_usage_counts_as_non_be() -> None:
    """Upstream's "calculate correctly for missing podMeta or transient metrics": pod abc has
    usage but is no longer listed; it counts as non-BE."""
    pods_all, pods_non_be = pods_used_milli({"abc": 8000, "def": 4000},
                                            [pod("def", "BE", "Burstable")])
    assert (pods_all, pods_non_be) == (12000, 8000)
    inputs = SuppressInputs(20000, 0, 11000, pods_all, pods_non_be, 0, 0)
    assert inputs.system_milli() == 0  # 11 − 12 floored
    strategy = ResourceThresholdStrategy(cpu_suppress_threshold_percent=70)
    assert calculate_be_suppress_cpu(inputs, strategy) == 6000  # 14 − 8


def test_be_is_label_or_kube_besteffort() -> None:
    assert is_be_pod(pod("a", "BE", "Burstable"))
    assert is_be_pod(pod("b", None, "BestEffort"))
    assert not is_be_pod(pod("c", "LS", "Burstable"))


@pytest.fixture
def setup(tmp_path: Path):
    env = fake_v2_tree(tmp_path, ["kubepods.slice/kubepods-besteffort.slice"])
    clock = FakeClock(1000.0)
    cache = MetricCache()
    cache.set(
        mt.NODE_CPU_INFO_KEY, CPUTopology([ProcessorInfo(i, i, 0, 0, "", 0) for i in range(4)])
    )
    states = FakeStates(
        node=node("4"), node_slo=node_slo(True), pods=[pod("ls", "LS", "Burstable")]
    )
    ctx = Context(
        env=env,
        executor=ResourceUpdateExecutor(clock),
        metric_cache=cache,
        states=states,
        feature_gate=koordlet_feature_gate.copy(),
        clock=clock,
    )
    cpu_max = tmp_path / "kubepods.slice/kubepods-besteffort.slice/cpu.max"
    return CPUSuppress(ctx), ctx, cpu_max


def _run(plugin: CPUSuppress, cpu_max: Path) -> str:
    """One round; then the fake file gets the period back, as the kernel's cpu.max keeps it."""
    plugin.run_once()
    quota = cpu_max.read_text().split()[0]
    cpu_max.write_text(f"{quota} 100000\n")
    return quota


def _feed(ctx: Context, node_cores: float, ls_cores: float) -> None:
    now = ctx.clock.now()
    ctx.metric_cache.append(
        [
            MetricSample(mt.NODE_CPU_USAGE, {}, now, node_cores),
            MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: "ls"}, now, ls_cores),
        ]
    )


def test_cfs_quota_drops_at_once_and_grows_by_ten_percent_of_node(setup) -> None:
    plugin, ctx, cpu_max = setup
    _feed(ctx, 2.7, 2.7)  # 2600m − 2700m < 0 → floor 2000
    assert _run(plugin, cpu_max) == "2000"
    ctx.clock.step(1)
    _feed(ctx, 0.0, 0.0)  # allowance 2600m, but +40000 (10 % of 4 cores) per round
    assert _run(plugin, cpu_max) == "42000"


def test_no_slo_skips_and_disabled_recovers_to_max(setup) -> None:
    plugin, ctx, cpu_max = setup
    ctx.states.node_slo = None
    _feed(ctx, 2.7, 2.7)
    assert _run(plugin, cpu_max) == "max"
    ctx.states.node_slo = node_slo(True)
    assert _run(plugin, cpu_max) == "2000"
    ctx.states.node_slo = node_slo(False)
    assert _run(plugin, cpu_max) == "max"


class Sink:
    """Where the recorder writes: the Events as created and patched."""

    def __init__(self) -> None:
        self.created: list[dict] = []
        self.patches: list[dict] = []

    def create(self, event: dict) -> dict:
        self.created.append(event)
        return event

    def patch(self, namespace: str, name: str, patch: dict) -> dict:
        self.patches.append(patch)
        return patch


@pytest.mark.parametrize("reservation", [
    "{not json",
    '{"resources": {"cpu": "lots"}}',
    '{"reservedCPUs": "0-x"}',
    "[" * 5000 + "]" * 5000,
], ids=["not-json", "bad-cpu-quantity", "bad-reserved-cpus", "nested-5000-deep"])
def test_malformed_reservation_is_skipped_with_one_event_and_suppression_goes_on(
        setup, caplog, reservation: str) -> None:
    # The annotation made every round throw: the BE quota stayed unlimited ("max").
    plugin, ctx, cpu_max = setup
    broadcaster = EventBroadcaster(Sink())
    ctx.event_recorder = broadcaster.new_recorder("koordlet", "node-1")
    ctx.states.node["metadata"]["uid"] = "node-uid"
    ctx.states.node["metadata"]["annotations"] = {
        "node.koordinator.sh/reservation": reservation}
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.helpers"):
        for _ in range(5):  # five rounds, as if a second apart
            _feed(ctx, 2.7, 2.7)
            assert _run(plugin, cpu_max) == "2000"  # as without the annotation
            ctx.clock.step(1)
    assert broadcaster.flush(30)
    broadcaster.shutdown(30)
    sink = broadcaster.sink
    assert isinstance(sink, Sink)
    (event,) = sink.created
    assert sink.patches == []
    assert (event["type"], event["reason"]) == ("Warning", "MalformedAnnotation")
    assert event["involvedObject"] == {"kind": "Node", "apiVersion": "v1", "name": "node-1",
                                       "uid": "node-uid"}
    assert event["message"].startswith(
        "cpusuppress: ignoring malformed annotation node.koordinator.sh/reservation on "
        "node node-1: ")
    (line,) = [r.getMessage() for r in caplog.records if r.name == "koordlet.qosmanager.helpers"]
    assert line == event["message"]


def test_a_new_malformed_value_is_reported_again(setup) -> None:
    plugin, ctx, cpu_max = setup
    broadcaster = EventBroadcaster(Sink())
    ctx.event_recorder = broadcaster.new_recorder("koordlet", "node-1")
    annotations = ctx.states.node["metadata"]["annotations"] = {}
    for value in ("{bad", "{bad", '{"reservedCPUs": "z"}', '{"resources": {"cpu": "1"}}'):
        annotations["node.koordinator.sh/reservation"] = value
        _feed(ctx, 2.7, 2.7)
        _run(plugin, cpu_max)
        ctx.clock.step(1)
    assert broadcaster.flush(30)
    broadcaster.shutdown(30)
    sink = broadcaster.sink
    assert isinstance(sink, Sink)
    prefix = ("cpusuppress: ignoring malformed annotation node.koordinator.sh/reservation on "
              "node node-1: ")
    first, second = (e["message"] for e in sink.created)  # the repeat and the good value: none
    assert first.startswith(prefix + "not valid JSON")
    assert second.startswith(prefix + "reservedCPUs: ")


def test_host_apps_count_as_non_be_unless_be_under_kubepods_besteffort(setup) -> None:
    """Upstream's host-app filter: an application is BE only with qos BE *and* cgroup base
    KubepodsBesteffort; one without a metric counts nowhere."""
    plugin, ctx, cpu_max = setup
    slo = ctx.states.node_slo
    slo.spec.host_applications = [HostApplicationSpec.model_validate(app) for app in (
        {"name": "nginx", "qos": "LS"},
        {"name": "yarn", "qos": "BE",
         "cgroupPath": {"base": "KubepodsBesteffort", "relativePath": "yarn"}},
        {"name": "be-at-root", "qos": "BE",
         "cgroupPath": {"base": "CgroupRoot", "relativePath": "be"}},
        {"name": "no-metric", "qos": "LS"},
    )]
    _feed(ctx, 2.0, 0.5)
    now = ctx.clock.now()
    ctx.metric_cache.append([
        MetricSample(mt.HOST_APPLICATION_CPU_USAGE, {mt.HOST_APP_NAME: name}, now, cores)
        for name, cores in (("nginx", 0.3), ("yarn", 0.6), ("be-at-root", 0.2))])
    inputs = plugin.collect_inputs()
    assert inputs is not None
    assert (inputs.host_all_milli, inputs.host_non_be_milli) == (1100, 500)
    # system 2000 − 500 − 1100 = 400; 2600 − 500 (LS pod) − 500 − 400 = 1200m
    assert _run(plugin, cpu_max) == "120000"


def test_each_applied_quota_is_an_audit_event(setup, tmp_path: Path) -> None:
    """Upstream's ``audit.V(1).Node().Reason(AdjustBEByNodeCPUUsage)`` after each write."""
    plugin, ctx, cpu_max = setup
    audit.setup(audit.Config(audit_log_dir=str(tmp_path / "audit")))
    try:
        _feed(ctx, 2.7, 2.7)
        _run(plugin, cpu_max)
        events = ReverseEventIterator(str(tmp_path / "audit"))
        e = events.next()
        assert e is not None and events.next() is None
        assert (e.type, e.reason, e.message) == (
            "node", "AdjustBEByNodeCPUUsage", "update BE group to cfs_quota: 2000")
    finally:
        audit.reset()


class _ShrinkingStates(FakeStates):
    """The pod list loses its last pod after it is first read: a pod deleted mid-round."""

    def get_all_pods(self) -> list:
        pods, self.pods = self.pods, self.pods[:-1]
        return pods


def test_a_pod_deleted_mid_round_counts_as_non_be(setup) -> None:
    plugin, ctx, cpu_max = setup
    ctx.states = _ShrinkingStates(node=node("4"), node_slo=node_slo(True),
                                  pods=[pod("ls", "LS", "Burstable"), pod("be", "BE", "Burstable")])
    now = ctx.clock.now()
    ctx.metric_cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, now, 1.0),
                             MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: "ls"}, now, 0.5),
                             MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: "be"}, now, 0.5)])
    inputs = plugin.collect_inputs()
    assert inputs is not None
    assert (inputs.pods_all_milli, inputs.pods_non_be_milli) == (1000, 1000)


def test_a_garbled_be_cpu_max_is_logged_by_name_and_skipped(
        setup, caplog: pytest.LogCaptureFixture) -> None:
    plugin, ctx, cpu_max = setup
    cpu_max.write_text("garbage\n")
    _feed(ctx, 2.7, 2.7)
    with caplog.at_level(logging.WARNING):
        plugin.run_once()  # cfsQuota policy: reads the quota
        ctx.states.node_slo = node_slo(False)
        plugin.run_once()  # recovery: writes −1 over it
    assert cpu_max.read_text() == "garbage\n"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2 and all(str(cpu_max) in w for w in warnings)


def test_cpu_max_without_period_reads_as_unlimited(setup) -> None:
    plugin, ctx, cpu_max = setup
    cpu_max.write_text("max\n")
    _feed(ctx, 2.7, 2.7)
    assert _run(plugin, cpu_max) == "2000"
