"""cpuburst (upstream `pkg/koordlet/qosmanager/plugins/cpuburst/cpu_burst.go`) on a fake cgroup
v2 tree: cfs_burst values, the quota scaling with the node's share-pool state, the clamp, the
reset, and a kernel without the burst file."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.nodeinfo import CPUTopology, ProcessorInfo
from koordlet.qosmanager.cpuburst import CPUBurst, Operation, static_burst_us, target_quota
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.util.clock import FakeClock

CID = "containerd://abc"


def test_static_burst_and_quota_clamp() -> None:
    assert static_burst_us(2000, 1000) == 2_000_000  # 2 cores × 1000 % of a 100 ms period
    assert target_quota(Operation.UP, 550000, 200000, 300) == 600000  # ceil 300 % of base
    assert target_quota(Operation.DOWN, 220000, 200000, 300) == 200000  # never under base
    assert target_quota(Operation.UP, 200000, 200000, 100) == 200000  # no quota burst room


def _slo(policy: str) -> NodeSLO:
    return NodeSLO.model_validate(
        {"metadata": {"name": "node-1"}, "spec": {"cpuBurstStrategy": {"policy": policy}}}
    )


def _ls_pod(annotations: dict[str, str] | None = None) -> dict:
    return {
        "metadata": {"name": "ls", "namespace": "default", "uid": "ls1",
                     "labels": {"koordinator.sh/qosClass": "LS"},
                     "annotations": annotations or {}},
        "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}]},
        "status": {"phase": "Running", "qosClass": "Burstable",
                   "containerStatuses": [{"name": "c", "containerID": CID}]},
    }


def _setup(tmp_path: Path, with_burst_file: bool, pod: dict):
    env = fake_v2_tree(tmp_path, [])
    pod_dir = env.pod_dir("Burstable", "ls1")
    cdir = env.container_dir(pod_dir, CID)
    fake_v2_tree(tmp_path, [cdir])
    (tmp_path / pod_dir / "cpu.max").write_text("400000 100000\n")
    (tmp_path / cdir / "cpu.max").write_text("200000 100000\n")
    if with_burst_file:
        for d in (pod_dir, cdir):
            (tmp_path / d / "cpu.max.burst").write_text("0\n")
    clock = FakeClock(1000.0)
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY,
              CPUTopology([ProcessorInfo(i, i, 0, 0, "", 0) for i in range(8)]))
    states = FakeStates(node=node("8"), node_slo=_slo("auto"), pods=[pod])
    gate = koordlet_feature_gate.copy()
    ctx = Context(env=env, executor=ResourceUpdateExecutor(clock), metric_cache=cache,
                  states=states, feature_gate=gate, clock=clock)
    plugin = CPUBurst(ctx)
    assert plugin.enabled()  # CPUBurst is a Beta gate, on by default
    return plugin, ctx, pod_dir, cdir


def _run(plugin: CPUBurst, tmp_path: Path, *dirs: str) -> None:
    """One round; then each fake cpu.max gets its period back, as the kernel's keeps it."""
    plugin.run_once()
    for d in dirs:
        f = tmp_path / d / "cpu.max"
        f.write_text(f"{f.read_text().split()[0]} 100000\n")


def _tick(ctx: Context, node_cores: float, throttled: float) -> None:
    assert isinstance(ctx.clock, FakeClock)  # _setup's
    ctx.clock.step(1)
    now = ctx.clock.now()
    ctx.metric_cache.append([
        MetricSample(mt.NODE_CPU_USAGE, {}, now, node_cores),
        MetricSample(mt.CONTAINER_CPU_THROTTLED, {mt.CONTAINER_ID: CID}, now, throttled),
    ])


def test_auto_policy_bursts_scales_with_node_state_and_resets(tmp_path: Path) -> None:
    plugin, ctx, pod_dir, cdir = _setup(tmp_path, True, _ls_pod())
    reader = CgroupReader.for_env(ctx.env)

    def quotas() -> tuple[int, int]:
        return reader.read_cpu_quota(pod_dir), reader.read_cpu_quota(cdir)

    _tick(ctx, 1.0, 0.3)  # idle node (1 of 8 CPUs, threshold 50 %), throttled container
    _run(plugin, tmp_path, pod_dir, cdir)
    assert (tmp_path / cdir / "cpu.max.burst").read_text().strip() == "2000000"
    assert (tmp_path / pod_dir / "cpu.max.burst").read_text().strip() == "2000000"
    assert quotas() == (440000, 240000)
    ctx.clock.step(10)  # a fresh window for the node average
    _tick(ctx, 1.0, 0.3)
    _run(plugin, tmp_path, pod_dir, cdir)
    assert quotas() == (488000, 288000)

    ctx.clock.step(10)
    _tick(ctx, 7.0, 0.3)  # share pool overloaded: scale down though throttled
    _run(plugin, tmp_path, pod_dir, cdir)
    assert quotas() == (430400, 230400)

    ctx.states.node_slo = _slo("none")
    _run(plugin, tmp_path, pod_dir, cdir)
    assert quotas() == (400000, 200000)
    assert (tmp_path / cdir / "cpu.max.burst").read_text().strip() == "0"


def test_pod_annotation_overrides_and_missing_burst_file_is_skipped(tmp_path: Path,
                                                                     caplog) -> None:
    pod = _ls_pod({"koordinator.sh/cpuBurst": json.dumps({"policy": "cfsQuotaBurstOnly"})})
    plugin, ctx, pod_dir, cdir = _setup(tmp_path, False, pod)
    _tick(ctx, 1.0, 0.3)
    _run(plugin, tmp_path, pod_dir, cdir)  # no cpu.max.burst on this "kernel": no error
    assert not (tmp_path / cdir / "cpu.max.burst").exists()
    assert CgroupReader.for_env(ctx.env).read_cpu_quota(cdir) == 240000

    pod["metadata"]["annotations"] = {"koordinator.sh/cpuBurst": "{not json"}
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.helpers"):
        _run(plugin, tmp_path, pod_dir, cdir)  # malformed: NodeSLO's policy (auto) applies
        assert CgroupReader.for_env(ctx.env).read_cpu_quota(cdir) == 288000
        _run(plugin, tmp_path, pod_dir, cdir)
    # Said once, not every round (other tests' leftover threads may log on other loggers).
    (line,) = [r.getMessage() for r in caplog.records
               if r.name == "koordlet.qosmanager.helpers"]
    assert line.startswith("cpuburst: ignoring malformed annotation koordinator.sh/cpuBurst on "
                           "pod ")


def test_garbled_cpu_max_is_logged_by_name_and_skipped(tmp_path: Path, caplog) -> None:
    """A cpu.max not in the kernel's shape: the round names it in one line, writes nothing
    over it, raises nothing; the container is skipped (its pod's quota is unknown)."""
    plugin, ctx, pod_dir, cdir = _setup(tmp_path, True, _ls_pod())
    for garbled in (pod_dir, cdir):
        (tmp_path / garbled / "cpu.max").write_text("garbage\n")
        _tick(ctx, 1.0, 0.3)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.cpuburst"):
            plugin.run_once()
        (line,) = [r.getMessage() for r in caplog.records
                   if r.name == "koordlet.qosmanager.cpuburst"]
        assert str(tmp_path / garbled / "cpu.max") in line
        assert (tmp_path / garbled / "cpu.max").read_text() == "garbage\n"
        assert (tmp_path / cdir / "cpu.max").read_text() in ("garbage\n", "200000 100000\n")
        (tmp_path / garbled / "cpu.max").write_text(
            "400000 100000\n" if garbled == pod_dir else "200000 100000\n")
