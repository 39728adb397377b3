"""The framework runtime: building a profile's plugins, running them in order, the evictor
(filters, limiter, dry run) and a descheduling pass over profiles."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from descheduler.apis.config.args import LowNodeLoadArgs
from descheduler.apis.config.types import DeschedulerConfiguration, DeschedulerProfile
from descheduler.descheduler import Descheduler, DeschedulingError
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.runtime import Framework, FrameworkError
from descheduler.framework.testing import FakeClient, listers
from descheduler.framework.types import EvictOptions, Handle, Obj, Status

CALLS: list[str] = []


class Recorder:
    """A plugin of every kind, recording its calls; evicts the pods it is told to."""

    def __init__(self, plugin: str, args: Any, handle: Handle) -> None:
        self.plugin, self.args, self.handle = plugin, args or {}, handle

    def name(self) -> str:
        return self.plugin

    def deschedule(self, nodes: list[Obj]) -> Status:
        CALLS.append(f"deschedule:{self.plugin}:{len(nodes)}")
        return self._evict()

    def balance(self, nodes: list[Obj]) -> Status:
        CALLS.append(f"balance:{self.plugin}:{len(nodes)}")
        return self._evict()

    def _evict(self) -> Status:
        for pod in self.args.get("evict", []):
            self.handle.evictor.evict(pod, EvictOptions(self.plugin, "test"))
        return Status(list(self.args.get("errors", [])))

    def filter(self, pod: Obj) -> bool:
        return self.args.get("filter", True)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        return True

    def evict(self, pod: Obj, options: EvictOptions) -> bool:
        CALLS.append(f"evict:{self.plugin}:{pod['metadata']['name']}:{options.reason}")
        return True


class BalanceOnly:
    def __init__(self, args: Any, handle: Handle) -> None:
        pass

    def name(self) -> str:
        return "BalanceOnly"

    def balance(self, nodes: list[Obj]) -> Status:
        return Status()


REGISTRY: dict[str, Any] = {name: functools.partial(Recorder, name)
                            for name in ("A", "B", "C", "Ev", "Ev2")}
REGISTRY["BalanceOnly"] = BalanceOnly


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


def profile(name: str = "p", args: dict[str, Any] | None = None, node_selector: Any = None,
            **points: Any) -> DeschedulerProfile:
    points.setdefault("evict", ["Ev"])
    return DeschedulerProfile.model_validate({
        "name": name, "nodeSelector": node_selector,
        "plugins": {p: {"enabled": [{"name": n} for n in names]} for p, names in points.items()},
        "pluginConfig": [{"name": n, "args": a} for n, a in (args or {}).items()]})


def pod(name: str, node: str = "n1", namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"nodeName": node}}


def node(name: str, ready: str = "True", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}


def framework(p: DeschedulerProfile, *, dry_run: bool = False,
              limiter: EvictionLimiter | None = None) -> Framework:
    return Framework(p, REGISTRY, listers(), FakeClient(), limiter or EvictionLimiter(),
                     dry_run=dry_run)


@pytest.mark.parametrize("points, error", [
    ({"evict": []}, "no evict plugin is enabled"),
    ({"evict": ["Ev", "Ev2"]}, "only one evict plugin can be enabled"),
    ({"balance": ["Nope"]}, "plugin 'Nope' does not exist"),
    ({"balance": ["A", "A"]}, "plugin 'A' already registered as BalancePlugin"),
    ({"deschedule": ["BalanceOnly"]}, "BalanceOnly does not implement DeschedulePlugin"),
    ({"evict": ["BalanceOnly"]}, "BalanceOnly does not implement EvictPlugin"),
])
def test_building_a_profile_fails_as_upstream(points: dict[str, Any], error: str) -> None:
    with pytest.raises(FrameworkError, match=error):
        framework(profile(**points))


def test_plugins_get_their_args_and_one_instance_serves_several_points() -> None:
    fw = framework(profile(args={"A": {"filter": False}}, balance=["A"], filter=["A"]))
    assert fw.balance_plugins[0] is fw.filter_plugins[0]
    assert fw.balance_plugins[0].args == {"filter": False}  # type: ignore[attr-defined]


def test_plugins_run_in_configured_order_and_errors_are_aggregated() -> None:
    fw = framework(profile(args={"A": {"errors": ["boom"]}, "C": {"errors": ["bang"]}},
                           deschedule=["B", "A"], balance=["C", "A"]))
    assert fw.run_deschedule_plugins([node("n1")]).errors == ["A: boom"]
    status = fw.run_balance_plugins([node("n1"), node("n2")])
    assert status.errors == ["C: bang", "A: boom"]
    assert CALLS == ["deschedule:B:1", "deschedule:A:1", "balance:C:2", "balance:A:2"]


def test_evictor_filters_are_anded() -> None:
    assert framework(profile(filter=["A", "B"])).evictor.filter(pod("x"))
    fw = framework(profile(args={"B": {"filter": False}}, filter=["A", "B"]))
    assert not fw.evictor.filter(pod("x"))


def test_evictor_hands_the_pod_to_the_evict_plugin() -> None:
    fw = framework(profile())
    assert fw.evictor.evict(pod("x"), EvictOptions("A", "too hot"))
    assert CALLS == ["evict:Ev:x:too hot"]


def test_dry_run_evicts_nothing_but_logs_and_counts(caplog: pytest.LogCaptureFixture) -> None:
    limiter = EvictionLimiter(max_total=1)
    fw = framework(profile(), dry_run=True, limiter=limiter)
    with caplog.at_level("INFO"):
        assert fw.evictor.evict(pod("x"), EvictOptions("LowNodeLoad", "node is overutilized"))
    assert CALLS == []
    assert "would evict pod default/x on node n1" in caplog.text
    assert "node is overutilized" in caplog.text
    assert not fw.evictor.evict(pod("y"), EvictOptions("LowNodeLoad", "again"))


@pytest.mark.parametrize("limits, pods, evicted", [
    ({"max_per_node": 1}, [pod("a", "n1"), pod("b", "n1"), pod("c", "n2")], ["a", "c"]),
    ({"max_per_namespace": 1}, [pod("a"), pod("b", namespace="o"), pod("c")], ["a", "b"]),
    ({"max_total": 2}, [pod("a"), pod("b", "n2"), pod("c", "n3")], ["a", "b"]),
    ({}, [pod("a"), pod("b"), pod("c")], ["a", "b", "c"]),
])
def test_limiter(limits: dict[str, Any], pods: list[dict[str, Any]], evicted: list[str]) -> None:
    fw = framework(profile(), limiter=EvictionLimiter(**limits))
    done = [p["metadata"]["name"] for p in pods if fw.evictor.evict(p, EvictOptions())]
    assert done == evicted
    assert [c.split(":")[2] for c in CALLS] == evicted


def config(*profiles: DeschedulerProfile, **fields: Any) -> DeschedulerConfiguration:
    return DeschedulerConfiguration(profiles=list(profiles), **fields)


def test_a_pass_runs_every_profiles_deschedule_plugins_before_any_balance_plugin() -> None:
    nodes = [node("n1", pool="x"), node("n2", pool="y"), node("n3", "False", pool="x")]
    d = Descheduler(config(profile("p1", deschedule=["A"], balance=["B"],
                                   node_selector={"matchLabels": {"pool": "x"}}),
                           profile("p2", deschedule=["C"], balance=["A"])),
                    REGISTRY, listers(nodes=nodes), FakeClient())
    d.run_once()
    # The not-ready n3 is left out; p1 sees only its pool's n1.
    assert CALLS == ["deschedule:A:1", "deschedule:C:2", "balance:B:1", "balance:A:2"]


def test_fewer_than_two_ready_nodes_does_nothing() -> None:
    d = Descheduler(config(profile(balance=["A"])), REGISTRY,
                    listers(nodes=[node("n1"), node("n2", "Unknown")]), FakeClient())
    with pytest.raises(DeschedulingError, match="cluster size is 0 or 1"):
        d.run_once()
    assert CALLS == []


def test_the_limiter_is_reset_every_pass_and_a_profile_error_stops_the_pass() -> None:
    p = profile(args={"A": {"evict": [pod("a")]}, "B": {"errors": ["boom"]}},
                balance=["A", "B"])
    d = Descheduler(config(p, profile("later", balance=["C"]), max_no_of_pods_to_evict_total=1),
                    REGISTRY, listers(nodes=[node("n1"), node("n2")]), FakeClient())
    for _ in range(2):
        with pytest.raises(DeschedulingError, match="profile p: B: boom"):
            d.run_once()
    assert CALLS.count("evict:Ev:a:test") == 2
    assert not any(c.startswith("balance:C") for c in CALLS)


@pytest.mark.parametrize("interval, timeout, expected", [
    (600.0, 300.0, 600.0), (60.0, 300.0, 300.0), (0.0, 300.0, 300.0)])
def test_detector_cache_timeout_is_raised_to_the_interval(interval: float, timeout: float,
                                                          expected: float) -> None:
    args = LowNodeLoadArgs(detector_cache_timeout=timeout)
    registry = REGISTRY | {"LowNodeLoad": functools.partial(Recorder, "LowNodeLoad")}
    d = Descheduler(config(profile(args={"LowNodeLoad": args}, balance=["LowNodeLoad"]),
                           descheduling_interval=interval),
                    registry, listers(), FakeClient())
    built = d.profiles[0][0].balance_plugins[0]
    assert built.args.detector_cache_timeout == expected  # type: ignore[attr-defined]
