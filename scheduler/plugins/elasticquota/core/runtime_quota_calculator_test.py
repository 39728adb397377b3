"""Fair sharing among siblings: the reference's worked example and upstream's
``runtime_quota_calculator_test.go`` cases."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from scheduler.plugins.elasticquota.core import runtime_quota_calculator
from scheduler.plugins.elasticquota.core.quota_info import QuotaInfo
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import (
    Dimension,
    QuotaNode,
    RuntimeQuotaCalculator,
    hamilton_deltas,
)


def node(name: str, weight: int, request: int, min_: int, *, allow_lent: bool = True,
         guarantee: int = 0) -> QuotaNode:
    return QuotaNode(name, request, weight, min_, guarantee, allow_lent)


def runtimes(total: int, *nodes: QuotaNode) -> dict[str, int]:
    dimension = Dimension()
    for n in nodes:
        dimension.set(n)
    dimension.redistribute(total)
    return {n.name: dimension.runtime_of(n.name) or 0 for n in nodes}


@pytest.mark.parametrize(("total", "nodes", "expected"), [
    # Reference §8.3 / upstream Iteration4AdjustQuota: (weight, request, min).
    (100, [node("A", 40, 5, 10), node("B", 60, 20, 15), node("C", 50, 40, 20),
           node("D", 80, 70, 15)], {"A": 5, "B": 20, "C": 35, "D": 40}),
    # Equal weights, 10 units among 3 hungry borrowers: the spare unit goes by name.
    (10, [node("c", 1, 100, 0), node("a", 1, 100, 0), node("b", 1, 100, 0)],
     {"a": 4, "b": 3, "c": 3}),
    # A borrower with weight 0 gets nothing beyond its min.
    (100, [node("a", 0, 100, 10), node("b", 1, 100, 10)], {"a": 10, "b": 90}),
    # A quota that does not lend keeps its whole min although it asks for less.
    (100, [node("a", 1, 5, 40, allow_lent=False), node("b", 1, 200, 0)], {"a": 40, "b": 60}),
    # A lending quota gets its request; the rest goes to the borrower.
    (100, [node("a", 1, 5, 40), node("b", 1, 200, 0)], {"a": 5, "b": 95}),
    # Mins beyond the total: every borrower stays at its min, nothing is redistributed.
    (100, [node("a", 1, 90, 60), node("b", 1, 90, 60)], {"a": 60, "b": 60}),
    # The guarantee raises the floor above min.
    (100, [node("a", 1, 90, 10, guarantee=50), node("b", 1, 90, 10)], {"a": 50 + 20, "b": 30}),
    # Borrowers that are satisfied give the excess back to the others (several rounds).
    (100, [node("a", 1, 12, 0), node("b", 1, 30, 0), node("c", 1, 100, 0)],
     {"a": 12, "b": 30, "c": 58}),
])
def test_redistribution(total: int, nodes: list[QuotaNode], expected: dict[str, int]) -> None:
    assert runtimes(total, *nodes) == expected


def test_hamilton_is_exact_for_byte_sized_memory() -> None:
    # w × T beyond 2**64: float arithmetic would lose units, integers do not.
    total = 2**62 + 12345
    nodes = [node(f"q{i}", w, 2**63, 0) for i, w in enumerate((2**40 + 1, 3, 2**39 + 7))]
    weights = [n.shared_weight for n in nodes]
    deltas = hamilton_deltas(total, sum(weights), np.array(weights, dtype=object))
    assert sum(deltas) == total
    assert sum(runtimes(total, *nodes).values()) == total


def info(name: str, max_: dict[str, int], min_: dict[str, int],
         weight: dict[str, int] | None = None, request: dict[str, int] | None = None) -> QuotaInfo:
    return QuotaInfo(name, "p", max=dict(max_), auto_scale_min=dict(min_), min=dict(min_),
                     shared_weight=dict(weight or max_), request=dict(request or {}))


def calculator(total: dict[str, int]) -> RuntimeQuotaCalculator:
    calc = RuntimeQuotaCalculator("p")
    calc.update_resource_keys(["cpu", "memory"])
    calc.set_total(total)
    return calc


def rl(cpu: int, memory: int) -> dict[str, int]:
    return {"cpu": cpu, "memory": memory}


def test_update_one_group_runtime_quota() -> None:
    """Upstream TestRuntimeQuotaCalculator_UpdateOneGroupRuntimeQuota."""
    calc = calculator(rl(100, 1000))
    test1 = info("test1", rl(80, 800), rl(60, 600), rl(1, 1))
    test2 = info("test2", rl(100, 1000), rl(50, 500), rl(1, 1), request=rl(90, 900))
    calc.update_member(test1)
    calc.update_member(test2)
    assert calc.runtime_of("test1") == rl(0, 0)
    assert calc.runtime_of("test2") == rl(90, 900)

    test1.request = rl(30, 300)
    assert calc.update_member(test1)
    assert calc.runtime_of("test1") == rl(30, 300)
    assert calc.runtime_of("test2") == rl(70, 700)

    test1.request = rl(60, 600)
    calc.update_member(test1)
    assert calc.runtime_of("test1") == rl(60, 600)
    assert calc.runtime_of("test2") == rl(50, 500)  # back to its min


def test_update_one_group_runtime_quota_2() -> None:
    """Upstream TestRuntimeQuotaCalculator_UpdateOneGroupRuntimeQuota2: limited by max."""
    calc = calculator(rl(120, 1200))
    test1 = info("test1", rl(80, 800), rl(50, 500), rl(1, 1), request=rl(100, 1000))
    calc.update_member(test1)
    assert calc.runtime_of("test1") == rl(80, 800)
    test2 = info("test2", rl(100, 1000), rl(50, 500), rl(1, 1), request=rl(150, 1500))
    calc.update_member(test2)
    assert calc.runtime_of("test1") == rl(60, 600)
    assert calc.runtime_of("test2") == rl(60, 600)


def test_request_below_min_gets_its_request() -> None:
    """Upstream TestRuntimeQuotaCalculator_UpdateOneGroupRequest."""
    calc = calculator(rl(50, 5000))
    for i in range(1, 6):
        q = info(f"test-{i}", rl(i * 100, i * 10000), rl(i * 80, i * 8000),
                 request=rl(i * 10, i * 1000))
        calc.update_member(q)
        assert calc.runtime_of(q.name) == q.request


def test_min_update_moves_the_runtime() -> None:
    """Upstream TestRuntimeQuotaCalculator_UpdateOneGroupMinQuota."""
    calc = calculator(rl(100, 10000))
    q = info("test1", rl(100, 10000), rl(70, 7000), request=rl(70, 7000))
    calc.update_member(q)
    assert calc.runtime_of("test1") == rl(70, 7000)
    q.auto_scale_min = rl(50, 5000)
    calc.update_member(q)
    assert calc.runtime_of("test1") == rl(70, 7000)  # sole borrower takes the rest


def test_resource_keys_and_versions() -> None:
    calc = RuntimeQuotaCalculator("p")
    calc.update_resource_keys(["cpu", "memory"])
    q = info("a", rl(10, 10), rl(0, 0), request=rl(5, 5))
    calc.set_total(rl(10, 10))
    calc.update_member(q)
    version = calc.version
    assert not calc.update_member(q)  # nothing changed: the version stays
    calc.set_total(rl(10, 10))
    assert calc.version == version
    calc.update_resource_keys(["cpu"])
    assert calc.runtime_of("a") == {"cpu": 5}
    calc.delete_member("a")
    assert calc.runtime_of("a") == {}
    assert not calc.has_member("a")


def reference_runtimes(total: int, nodes: list[QuotaNode]) -> dict[str, int]:
    """§8.3 step by step, with the split done in exact fractions (the oracle)."""
    runtime: dict[str, int] = {}
    borrowers = []
    for n in nodes:
        floor = max(n.min, n.guarantee)
        if n.request > floor:
            borrowers.append(n)
            runtime[n.name] = floor
        else:
            runtime[n.name] = n.request if n.allow_lent else floor
    remaining = total - sum(runtime.values())
    while remaining > 0 and borrowers and sum(n.shared_weight for n in borrowers) > 0:
        weight = sum(n.shared_weight for n in borrowers)
        exact = {n.name: Fraction(n.shared_weight * remaining, weight)
                 for n in borrowers if n.shared_weight > 0}
        share = {name: int(f) for name, f in exact.items()}
        leftover = remaining - sum(share.values())
        for name in sorted(exact, key=lambda k: (-(exact[k] - share[k]), k))[:leftover]:
            share[name] += 1
        remaining, still = 0, []
        for n in borrowers:
            got = runtime[n.name] + share.get(n.name, 0)
            if got < n.request:
                runtime[n.name] = got
                still.append(n)
            else:
                remaining += got - n.request
                runtime[n.name] = n.request
        borrowers = still
    return runtime


@pytest.mark.parametrize("path", ["python", "int64", "numpy of python integers"])
@pytest.mark.parametrize("seed", range(40))
def test_redistribution_matches_the_reference_rules(seed: int, path: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A few children are split in Python, many on numpy columns: int64, or Python integers
    # where int64 could overflow. All three give the same runtimes.
    if path != "python":
        monkeypatch.setattr(runtime_quota_calculator, "_NUMPY_FROM", 0)
    if path == "numpy of python integers":
        monkeypatch.setattr(runtime_quota_calculator, "_INT64", 0)
    rng = random.Random(seed)
    nodes = [node(f"q{i:02d}", rng.choice((0, 1, 3, 7, 1000)), rng.randint(0, 500),
                  rng.randint(0, 100), allow_lent=rng.random() < 0.8,
                  guarantee=rng.choice((0, 0, 50)))
             for i in range(rng.randint(1, 30))]
    total = rng.randint(0, 6000)
    expected = reference_runtimes(total, nodes)
    assert runtimes(total, *nodes) == expected
