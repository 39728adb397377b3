"""RemovePodsViolatingTopologySpreadConstraint, mirroring upstream's
``topologyspreadconstraint_test.go`` cases: how many pods move between domains of given sizes,
which pods a domain gives up (fit elsewhere, node selectors, evictability), soft constraints,
node inclusion policies, matchLabelKeys, namespaces and the label selector."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.framework.plugins.kubernetes.testing import Env, taint, with_labels
from descheduler.framework.testing import DS, node, pod

ZONE = "zone"


def constraint(max_skew: int = 1, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": ZONE, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"foo": "bar"}}, **extra}


def spread(prefix: str, count: int, node_name: str, *constraints: dict[str, Any],
           labels: dict[str, str] | None = None, **extra: Any) -> list[dict[str, Any]]:
    """``count`` pods labelled foo=bar on ``node_name``, each with ``constraints`` (default:
    one DoNotSchedule over zones, maxSkew 1)."""
    return [pod(f"{prefix}{i}", 100, 0, node_name, labels={"foo": "bar", **(labels or {})},
                topologySpreadConstraints=list(constraints or (constraint(),)), **extra)
            for i in range(count)]


def zones(*names: str, cpu: int = 4000, pods: int = 200) -> list[dict[str, Any]]:
    return [with_labels(node(f"n{name}", cpu=cpu, pods=pods), {ZONE: name}) for name in names]


def evicted_count(pods: list[dict[str, Any]], nodes: list[dict[str, Any]] | None = None,
                  args: dict[str, Any] | None = None, **evictor: Any) -> int:
    env = Env("RemovePodsViolatingTopologySpreadConstraint", nodes or zones("A", "B"), pods,
              args, evictor=evictor or None)
    return len(env.run())


@pytest.mark.parametrize("name, pods, expected", [
    ("[3,1], maxSkew 1: move 1 to [2,2]", spread("a", 3, "nA") + spread("b", 1, "nB"), 1),
    ("[2,2] is balanced", spread("a", 2, "nA") + spread("b", 2, "nB"), 0),
    ("[5,2], maxSkew 1: move 1 to [4,3]", spread("a", 5, "nA") + spread("b", 2, "nB"), 1),
    ("[4,0], maxSkew 1: move 2 to [2,2]", spread("a", 4, "nA"), 2),
    ("[2,6], maxSkew 2: move 1 to [3,5]",
     spread("a", 2, "nA", constraint(2)) + spread("b", 6, "nB", constraint(2)), 1),
    ("[3,1] but the pods are not evictable",
     spread("a", 3, "nA", owners=DS) + spread("b", 1, "nB", owners=DS), 0),
    ("[4,0]: pods whose node selector only fits their node stay (counted as moved)",
     spread("a", 3, "nA", nodeSelector={ZONE: "A"}) + spread("b", 1, "nA"), 1),
    ("soft constraints are left alone by default",
     spread("a", 3, "nA", constraint(when="ScheduleAnyway"))
     + spread("b", 1, "nB", constraint(when="ScheduleAnyway")), 0),
    ("pods outside the selector do not count",
     spread("a", 2, "nA") + [pod("other", 100, 0, "nA", labels={"foo": "baz"})]
     + spread("b", 1, "nB"), 0),
])
def test_domains(name: str, pods: list[dict[str, Any]], expected: int) -> None:
    assert evicted_count(pods) == expected, name


def test_three_domains_move_to_the_ideal_average() -> None:
    pods = spread("a", 100, "nA") + spread("b", 1, "nB")
    assert evicted_count(pods, zones("A", "B", "C")) == 66


def test_soft_constraints_when_asked() -> None:
    pods = spread("a", 3, "nA", constraint(when="ScheduleAnyway")) + spread(
        "b", 1, "nB", constraint(when="ScheduleAnyway"))
    assert evicted_count(pods, args={"constraints": ["DoNotSchedule", "ScheduleAnyway"]}) == 1


def test_pods_go_only_where_they_fit_unless_told_otherwise() -> None:
    # nB cannot take another 100m pod
    nodes = [with_labels(node("nA"), {ZONE: "A"}), with_labels(node("nB", cpu=150), {ZONE: "B"})]
    pods = spread("a", 3, "nA") + spread("b", 1, "nB")
    assert evicted_count(pods, nodes) == 0
    assert evicted_count(pods, nodes, {"topologyBalanceNodeFit": False}) == 1


def test_taints_of_the_emptier_domain() -> None:
    nodes = [with_labels(node("nA"), {ZONE: "A"}), taint(with_labels(node("nB"), {ZONE: "B"}), "t")]
    tolerating = [{"key": "t", "operator": "Exists"}]
    assert evicted_count(spread("a", 2, "nA"), nodes) == 0
    assert evicted_count(spread("a", 2, "nA", tolerations=tolerating), nodes) == 1
    # nodeTaintsPolicy Honor: the tainted zone is no domain, [2] is balanced
    honor = constraint(nodeTaintsPolicy="Honor")
    assert evicted_count(spread("a", 2, "nA", honor), nodes) == 0


def test_node_affinity_policy_decides_the_domains() -> None:
    nodes = [*zones("A", "B"), with_labels(node("nC"), {ZONE: "C", "pool": "other"})]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "DoesNotExist"}]}]}}}
    # Honor (default): domains A and B only, [2,2] is balanced
    pods = spread("a", 2, "nA", affinity=affinity) + spread("b", 2, "nB", affinity=affinity)
    assert evicted_count(pods, nodes) == 0
    ignore = constraint(nodeAffinityPolicy="Ignore")
    pods = (spread("a", 2, "nA", ignore, affinity=affinity)
            + spread("b", 2, "nB", ignore, affinity=affinity))
    # zone C counts now ([2,2,0]) but the pods cannot go there: nothing moves
    assert evicted_count(pods, nodes) == 0
    assert evicted_count(pods, nodes, {"topologyBalanceNodeFit": False}) == 1


def test_match_label_keys_split_the_count() -> None:
    keyed = constraint(matchLabelKeys=["rev"])
    pods = (spread("a", 2, "nA", keyed, labels={"rev": "1"})
            + spread("b", 2, "nA", keyed, labels={"rev": "2"}))
    # each revision is [2,0]: one of each moves
    assert evicted_count(pods) == 2


def test_namespaces_and_the_label_selector() -> None:
    pods = spread("a", 3, "nA") + spread("b", 1, "nB")
    assert evicted_count(pods, args={"namespaces": {"exclude": ["default"]}}) == 0
    # the label selector limits what is evicted, not what is counted
    assert evicted_count(pods, args={"labelSelector": {"matchLabels": {"tier": "x"}}}) == 0
    assert evicted_count(pods, args={"labelSelector": {"matchLabels": {"foo": "bar"}}}) == 1


def os_nodes(windows: int) -> list[dict[str, Any]]:
    """Three linux nodes and ``windows`` windows nodes, each its own "node" domain."""
    return [with_labels(node(f"n{i}"), {"node": f"{os}{i}", "os": os})
            for i, os in enumerate(["linux"] * 3 + ["windows"] * windows, start=1)]


def windows_pods(*counts: int) -> list[dict[str, Any]]:
    """``counts[k]`` pods on windows node n(4+k), each selecting windows nodes and spread over
    the "node" key."""
    per_node = {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"foo": "bar"}}}
    return [p for k, count in enumerate(counts)
            for p in spread(f"w{k}-", count, f"n{4 + k}", per_node, nodeSelector={"os": "windows"})]


@pytest.mark.parametrize("name, windows, counts, expected", [
    ("linux nodes are no domains for pods selecting windows: [3,3,2] is balanced", 3, (3, 3, 2),
     0),
    ("a new windows node: [3,3,2,0] moves 2", 4, (3, 3, 2), 2),
    ("[4,3,1] moves 1", 3, (4, 3, 1), 1),
])
def test_node_selectors_decide_the_domains(name: str, windows: int, counts: tuple[int, ...],
                                           expected: int) -> None:
    assert evicted_count(windows_pods(*counts), os_nodes(windows)) == expected, name


def test_only_some_pods_carry_the_constraint() -> None:
    # [2,1]: one constrained pod, the other pods only match its selector; balanced
    pods = [*spread("c", 1, "nA"), pod("x1", 100, 0, "nA", labels={"foo": "bar"}),
            pod("y", 100, 0, "nB", labels={"foo": "bar"})]
    assert evicted_count(pods) == 0
    # [3,1]: one pod moves, whichever carries the constraint
    pods.append(pod("x2", 100, 0, "nA", labels={"foo": "bar"}))
    assert evicted_count(pods) == 1
