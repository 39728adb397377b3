"""DefaultPreemption through a profile: which pods become victims, which node is chosen,
who may preempt, and the messages when preemption cannot help."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.apis.config import DefaultPreemptionArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from scheduler.framework.plugins.defaultpreemption import DefaultPreemption
from scheduler.framework.plugins.defaultpreemption.pdb import budgets_of
from scheduler.framework.plugins.defaultpreemption.testing import (
    FakeClient,
    NodeLabel,
    ResourceFit,
    attempt,
    build_framework,
    make_node,
    make_pod,
    node_infos,
    succeeded,
)
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unschedulable
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.testing import new_handle

T0 = "2024-01-01T00:00:00Z"
T1 = "2024-01-01T01:00:00Z"
T2 = "2024-01-01T02:00:00Z"


class PDBLister:
    def __init__(self, pdbs: list[dict[str, Any]]) -> None:
        self.pdbs = pdbs

    def list(self) -> list[dict[str, Any]]:
        return self.pdbs


class InformerFactory:
    """Hands out one informer whose lister holds the given PDBs."""

    def __init__(self, pdbs: list[dict[str, Any]]) -> None:
        self.lister = PDBLister(pdbs)
        self.asked: list[Any] = []

    def informer_for(self, resource: Any, **kw: Any) -> Any:
        self.asked.append(resource.plural)
        return self


def pdb(app: str, allowed: int, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": f"pdb-{app}", "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed}}


# Victims --------------------------------------------------------------------------------

def test_victims_are_the_fewest_lower_priority_pods_after_reprieve() -> None:
    pods = [make_pod("low", 1, cpu="1", node="n1"), make_pod("mid", 2, cpu="2", node="n1"),
            make_pod("top", 3, cpu="1", node="n1")]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1", cpu="4")], pods), client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    # All three removed frees 4 cpus; "top" (1) is reprieved first, "mid" (2) does not fit
    # back, "low" (1) does: only "mid" goes.
    assert succeeded(a) and a.result is not None and a.result.nominated_node_name == "n1"
    assert client.deleted() == ["mid"]


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    pods = [make_pod("same", 10, cpu="2", node="n1"), make_pod("higher", 20, cpu="1", node="n1"),
            make_pod("low", 1, cpu="1", node="n1")]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1", cpu="4")], pods), client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="1"))

    assert succeeded(a)
    assert client.deleted() == ["low"]


def test_among_equal_priorities_the_latest_started_pod_goes() -> None:
    pods = [make_pod("old", 1, cpu="1", node="n1", start_time=T0),
            make_pod("young", 1, cpu="1", node="n1", start_time=T2),
            make_pod("middle", 1, cpu="1", node="n1", start_time=T1)]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1", cpu="3")], pods), client=client)

    attempt(fwk, make_pod("p", 10, cpu="1"))

    assert client.deleted() == ["young"]


def test_pdb_protected_pods_are_reprieved_first() -> None:
    pods = [make_pod("a", 1, cpu="1", node="n1", labels={"app": "a"}, start_time=T0),
            make_pod("b", 1, cpu="1", node="n1", labels={"app": "b"}, start_time=T1),
            make_pod("c", 1, cpu="1", node="n1", labels={"app": "c"}, start_time=T2)]
    infos = node_infos([make_node("n1", cpu="3")], pods)

    without = FakeClient()
    attempt(build_framework(infos, client=without), make_pod("p", 10, cpu="1"))
    with_pdb = FakeClient()
    factory = InformerFactory([pdb("c", 0)])
    attempt(build_framework(node_infos([make_node("n1", cpu="3")], pods), client=with_pdb,
                            informer_factory=factory), make_pod("p", 10, cpu="1"))

    assert without.deleted() == ["c"]  # the latest started
    assert with_pdb.deleted() == ["b"]  # "c" is kept: its budget allows no disruption
    assert factory.asked == ["poddisruptionbudgets"]


def test_select_victims_counts_the_pdb_violations_it_cannot_avoid() -> None:
    pods = [make_pod("a", 1, cpu="2", node="n1", labels={"app": "a"}),
            make_pod("b", 2, cpu="2", node="n1", labels={"app": "b"})]
    fwk = build_framework(node_infos([make_node("n1", cpu="4")], pods))
    plugin = fwk.plugin("DefaultPreemption")
    assert isinstance(plugin, DefaultPreemption)

    node = fwk.snapshot.node_infos[0].clone()
    victims, violations, status = plugin.select_victims_on_node(
        CycleState(), PodInfo(make_pod("p", 10, cpu="4")), node,
        budgets_of([pdb("a", 0), pdb("b", 1)]))

    assert status is None
    assert [v.name for v in victims] == ["b", "a"]  # most important first
    assert violations == 1


# Choosing the node ----------------------------------------------------------------------

def test_a_node_without_pdb_violations_is_preferred() -> None:
    pods = [make_pod("protected", 1, cpu="4", node="n1", labels={"app": "a"}),
            make_pod("higher", 5, cpu="4", node="n2", labels={"app": "b"})]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1"), make_node("n2")], pods), client=client,
                          informer_factory=InformerFactory([pdb("a", 0)]))

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.result is not None and a.result.nominated_node_name == "n2"
    assert client.deleted() == ["higher"]


def test_the_node_with_the_lowest_priority_victims_is_chosen() -> None:
    pods = [make_pod("v5", 5, cpu="4", node="n1"), make_pod("v3", 3, cpu="4", node="n2"),
            make_pod("v4", 4, cpu="4", node="n3")]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node(f"n{i}") for i in (1, 2, 3)], pods),
                          client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.result is not None and a.result.nominated_node_name == "n2"
    assert client.deleted() == ["v3"]


def test_few_candidates_stop_the_dry_run_at_the_random_offset() -> None:
    nodes = [make_node(f"n{i}") for i in range(5)]
    # The victims on n0 and n3 matter more than those elsewhere.
    pods = [make_pod(f"v{i}", 5 if i in (0, 3) else 1, cpu="4", node=f"n{i}")
            for i in range(5)]
    one = DefaultPreemptionArgs(min_candidate_nodes_percentage=0,
                                min_candidate_nodes_absolute=1)
    for offset, args, want in [(0, one, "n0"), (3, one, "n3"), (0, None, "n1"),
                               (3, None, "n4")]:
        fwk = build_framework(node_infos(nodes, pods), client=FakeClient(), args=args,
                              offset=offset)
        a = attempt(fwk, make_pod("p", 10, cpu="2"))
        # One candidate is enough: the first node from the offset, however costly; with
        # every node tried, the cheapest victims from the offset on.
        assert a.result is not None and a.result.nominated_node_name == want, (offset, args)


@pytest.mark.parametrize("nodes, pct, absolute, want", [
    (10, 10, 100, 10),     # never more than the nodes
    (1000, 10, 100, 100),  # the absolute minimum wins
    (5000, 10, 100, 500),  # the percentage wins
    (50, 0, 1, 1),
    (0, 10, 100, 0),
])
def test_number_of_candidates(nodes: int, pct: int, absolute: int, want: int) -> None:
    args = DefaultPreemptionArgs(min_candidate_nodes_percentage=pct,
                                 min_candidate_nodes_absolute=absolute)
    fwk = build_framework([], args=args)
    plugin = fwk.plugin("DefaultPreemption")
    assert isinstance(plugin, DefaultPreemption)
    assert plugin.calculate_num_candidates(nodes) == want


def test_invalid_args_are_refused() -> None:
    with pytest.raises(ValueError, match="minCandidateNodesPercentage"):
        DefaultPreemption(DefaultPreemptionArgs(min_candidate_nodes_percentage=0,
                                                min_candidate_nodes_absolute=0), new_handle())


# Who may preempt, and where preemption cannot help ---------------------------------------

def test_preemption_policy_never_does_not_preempt() -> None:
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1")], [make_pod("v", 1, cpu="4", node="n1")]),
                          client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="2", preemptionPolicy="Never"))

    assert a.result is None
    assert a.status.code == Code.UNSCHEDULABLE
    assert a.status.message() == "preemption: not eligible due to preemptionPolicy=Never."
    assert client.calls == []


def terminating_victim(name: str, node: str) -> dict[str, Any]:
    pod = make_pod(name, 1, cpu="4", node=node)
    pod["metadata"]["deletionTimestamp"] = T0
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True",
                                    "reason": "PreemptionByScheduler"}]
    return pod


def test_a_pod_waits_while_a_victim_on_its_nominated_node_terminates() -> None:
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1"), make_node("n2")],
                                     [terminating_victim("going", "n1"),
                                      make_pod("other", 1, cpu="4", node="n2")]),
                          client=client)
    pod = make_pod("p", 10, cpu="2")
    pod["status"]["nominatedNodeName"] = "n1"

    a = attempt(fwk, pod)

    assert a.result is None
    assert a.status.message() == ("preemption: not eligible due to a terminating pod on the "
                                  "nominated node.")
    assert client.calls == []


def test_a_nominated_node_now_unresolvable_does_not_block_preemption() -> None:
    nodes = [make_node("n1"), make_node("n2", labels={"pool": "ok"})]
    client = FakeClient()
    fwk = build_framework(node_infos(nodes, [terminating_victim("going", "n1"),
                                             make_pod("other", 1, cpu="4", node="n2")]),
                          plugins=(NodeLabel, ResourceFit), client=client)
    pod = make_pod("p", 10, cpu="2")
    pod["status"]["nominatedNodeName"] = "n1"

    a = attempt(fwk, pod)

    assert a.result is not None and a.result.nominated_node_name == "n2"
    assert client.deleted() == ["other"]


def test_unschedulable_and_unresolvable_nodes_are_not_candidates() -> None:
    # n1 would fit after evicting "cheap", but its label rejects the pod for good.
    nodes = [make_node("n1"), make_node("n2", labels={"pool": "ok"})]
    pods = [make_pod("cheap", 1, cpu="4", node="n1"), make_pod("dear", 5, cpu="4", node="n2")]
    client = FakeClient()
    fwk = build_framework(node_infos(nodes, pods), plugins=(NodeLabel, ResourceFit),
                          client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.result is not None and a.result.nominated_node_name == "n2"
    assert client.deleted() == ["dear"]


def test_no_candidate_explains_every_node_and_clears_the_nomination() -> None:
    nodes = [make_node("n1"), make_node("n2", cpu="1", labels={"pool": "ok"}),
             make_node("n3", labels={"pool": "ok"})]
    pods = [make_pod("unrelated", 1, cpu="1", node="n1"),
            make_pod("small", 1, cpu="1", node="n2"),
            make_pod("important", 100, cpu="4", node="n3")]
    client = FakeClient()
    fwk = build_framework(node_infos(nodes, pods), plugins=(NodeLabel, ResourceFit),
                          client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    # n1: unresolvable, not tried; n2: too small even when empty; n3: nothing to evict.
    assert a.status.code == Code.UNSCHEDULABLE
    assert a.status.message() == (
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling.")
    assert client.calls == []
    plugin = fwk.plugin("DefaultPreemption")
    assert isinstance(plugin, DefaultPreemption)
    result, _ = plugin.post_filter(a.state, PodInfo(make_pod("p", 10, cpu="2")),
                                   a.diagnosis.node_to_status)
    assert result is not None and result.nominated_node_name == ""


def test_no_unschedulable_node_at_all() -> None:
    fwk = build_framework(node_infos([make_node("n1"), make_node("n2")], []),
                          plugins=(NodeLabel, ResourceFit))

    a = attempt(fwk, make_pod("p", 10, cpu="2"))

    assert a.status.message() == ("preemption: 0/2 nodes are available: 2 Preemption is not "
                                  "helpful for scheduling.")


# PreFilter extensions ---------------------------------------------------------------------

class NoBlockers(PreFilterPlugin, FilterPlugin):
    """Keeps the pod off nodes with a ``role=blocker`` pod, tracking them in cycle state the
    way InterPodAffinity tracks matching pods, so only the AddPod/RemovePod extensions let a
    simulation see a blocker leave."""

    name = "NoBlockers"

    class Blockers(dict):
        def clone(self) -> NoBlockers.Blockers:
            return NoBlockers.Blockers({k: set(v) for k, v in self.items()})

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        state.write(self.name, NoBlockers.Blockers({
            ni.name: {p.key for p in ni.pods.values() if p.labels.get("role") == "blocker"}
            for ni in snapshot.node_infos}))
        return None, None

    def pre_filter_extensions(self) -> NoBlockers:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        if pod_to_add.labels.get("role") == "blocker":
            state.read(self.name)[node_info.name].add(pod_to_add.key)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        state.read(self.name)[node_info.name].discard(pod_to_remove.key)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        if state.read(self.name)[node_info.name]:
            return unschedulable("node(s) had a blocker")
        return None


def test_prefilter_extensions_follow_the_simulation_on_a_copy_of_the_state() -> None:
    pods = [make_pod("blocker", 1, cpu="100m", node="n1", labels={"role": "blocker"}),
            make_pod("bystander", 1, cpu="100m", node="n1")]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1")], pods),
                          plugins=(NoBlockers, ResourceFit), client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="1"))

    # The blocker leaves; the bystander is reprieved; the cycle's own state is untouched.
    assert client.deleted() == ["blocker"]
    assert a.state.read("NoBlockers")["n1"] == {"default/blocker"}


class FailingExtension(NoBlockers):
    name = "FailingExtension"

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        return Status(Code.ERROR, "state is broken")


def test_an_extension_error_fails_the_attempt_without_evicting() -> None:
    pods = [make_pod("blocker", 1, cpu="100m", node="n1", labels={"role": "blocker"})]
    client = FakeClient()
    fwk = build_framework(node_infos([make_node("n1")], pods),
                          plugins=(FailingExtension, ResourceFit), client=client)

    a = attempt(fwk, make_pod("p", 10, cpu="1"))

    assert a.status.code == Code.ERROR
    assert "state is broken" in a.status.message()
    assert client.calls == []
