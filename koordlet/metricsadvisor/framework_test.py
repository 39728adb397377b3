from koordlet.metriccache import aggregate
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.framework import Config, MetricAdvisor
from pkg.util.clock import FakeClock


class SimulatedNode:
    """A simulated source stands in for the real collectors through the same interface."""

    name = "SimulatedNode"

    def collect(self, now):
        return [MetricSample(mt.NODE_CPU_USAGE, {}, now, 3.5)]


class Broken:
    name = "Broken"

    def collect(self, now):
        raise OSError("cgroup gone")


def test_advisor_stores_rounds_and_survives_failing_collectors():
    clock = FakeClock()
    cache = MetricCache()
    advisor = MetricAdvisor(cache, [Broken(), SimulatedNode()], clock=clock)
    advisor.run_once()
    clock.step(1)
    advisor.run_once()
    res = cache.query(mt.NODE_CPU_USAGE, {}, clock.now() - 2, clock.now())
    assert res.count() == 2 and res.value(aggregate.LAST) == 3.5


def test_interval_below_one_second_disables_the_advisor():
    assert not MetricAdvisor(MetricCache(), [], Config(collect_res_used_interval=0.5)).enabled()
