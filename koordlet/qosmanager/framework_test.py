"""qosmanager framework: which strategies run, and a failing round does not end a strategy."""

from __future__ import annotations

import threading

from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.framework import Context, QOSManager
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.qosmanager.testing import FakeStates
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.cgroup_env import CgroupEnv
from pkg.features import koordlet_feature_gate


class _Flaky:
    name = "Flaky"

    def __init__(self, ctx: Context) -> None:
        self.rounds = 0
        self.done = threading.Event()

    def enabled(self) -> bool:
        return True

    def interval_seconds(self) -> float:
        return 0.01

    def run_once(self) -> None:
        self.rounds += 1
        if self.rounds >= 3:
            self.done.set()
        raise RuntimeError("boom")


def _ctx(interval: float = 1.0) -> Context:
    return Context(
        env=CgroupEnv(),
        executor=ResourceUpdateExecutor(),
        metric_cache=MetricCache(),
        states=FakeStates(),
        feature_gate=koordlet_feature_gate.copy(),
        collect_res_used_interval_seconds=interval,
    )


def test_failing_rounds_keep_the_strategy_running() -> None:
    manager = QOSManager(_ctx(), {"Flaky": _Flaky})
    stop = threading.Event()
    threads = manager.run(stop)
    flaky = manager.strategies[0]
    assert isinstance(flaky, _Flaky)
    try:
        assert flaky.done.wait(5)
    finally:
        stop.set()
        for t in threads:
            t.join(5)


def test_sub_second_collect_interval_disables_everything() -> None:
    manager = QOSManager(_ctx(0.5), {"Flaky": _Flaky})
    assert manager.run(threading.Event()) == []


def test_cpusuppress_follows_its_feature_gate() -> None:
    ctx = _ctx()
    ctx.feature_gate.set("BECPUSuppress=false")
    assert not QOSManager(ctx, STRATEGY_PLUGINS).strategies[0].enabled()
    ctx.feature_gate.set("BECPUSuppress=true")
    assert QOSManager(ctx, STRATEGY_PLUGINS).strategies[0].enabled()
