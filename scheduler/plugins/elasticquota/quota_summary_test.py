"""The quota path of a pending pod on small trees: blocked at its quota, blocked at a parent
(``enableCheckParentQuota``), fits; the hints on non-lending siblings and scaled mins; and the
``quota`` section the scheduler's why-pending entry carries."""

from __future__ import annotations

from api.extension.elastic_quota import ROOT_QUOTA_NAME
from api.extension.objects import KubeDict
from scheduler.framework.plugins.defaultpreemption.testing import make_node
from scheduler.plugins.elasticquota.core import GroupQuotaManager
from scheduler.plugins.elasticquota.quota_summary import (
    Block,
    Check,
    QuotaChecks,
    QuotaPodState,
    explain,
)
from scheduler.plugins.elasticquota.testing import (
    QuotaCluster,
    cpu_pods,
    make_quota,
    make_quota_pod,
)


def _tree(cpu: str, *quotas: KubeDict) -> GroupQuotaManager:
    m = GroupQuotaManager({}, {})
    m.on_node_add(make_node("n1", cpu=cpu, memory="64Gi"))
    for q in quotas:
        m.update_quota(q)
    return m


def _pods(m: GroupQuotaManager, quota: str, prefix: str, n: int, *, node: str = "",
          preemptible: bool = True) -> None:
    for i in range(n):
        m.on_pod_add(quota, make_quota_pod(f"{prefix}{i}", quota, node=node,
                                           preemptible=preemptible))


def _explain(m: GroupQuotaManager, quota: str, pod: str,
             checks: QuotaChecks = QuotaChecks()) -> QuotaPodState:
    info = m.get_quota_info(quota)
    assert info is not None
    entry = info.pods[f"default/{pod}"]
    return explain(f"default/{pod}", m.path_summary(quota), entry.request, entry.non_preemptible,
                   checks, m.children_summary)


def test_a_pod_over_its_quota_is_blocked_at_its_quota_in_the_dimension_that_is_short() -> None:
    m = _tree("8", make_quota("team-a", {"cpu": "2", "memory": "8Gi"}, {"cpu": "1"}))
    _pods(m, "team-a", "run", 2, node="n1")
    _pods(m, "team-a", "wait", 1)
    state = _explain(m, "team-a", "wait0")
    assert state.blocks == (Block("team-a", Check.RUNTIME, ("cpu",)),)
    assert [level.name for level in state.path] == [ROOT_QUOTA_NAME, "team-a"]
    lines = state.lines()
    assert lines[0] == ("Quota team-a: the pod requests cpu:1,memory:1Gi; blocked at team-a: "
                        "used + request > runtime in [cpu].")
    assert lines[-1] == ("    team-a: min cpu:1, max cpu:2,memory:8Gi, runtime cpu:2,memory:3Gi, "
                         "used cpu:2,memory:2Gi, request cpu:3,memory:3Gi"
                         "  <- used + request > runtime in [cpu]")
    data = state.to_dict()
    assert data["blocked"] == [{"quota": "team-a", "check": "runtime", "dimensions": ["cpu"]}]
    assert data["podRequest"] == {"cpu": "1", "memory": "1Gi"}
    # Without enableRuntimeQuota the limit is max: the same pod is blocked by max.
    assert _explain(m, "team-a", "wait0", QuotaChecks(runtime_quota=False)).blocks == (
        Block("team-a", Check.MAX, ("cpu",)),)


def test_a_non_preemptible_pod_is_blocked_by_its_quotas_min() -> None:
    m = _tree("8", make_quota("team-a", {"cpu": "6"}, {"cpu": "1"}))
    _pods(m, "team-a", "run", 1, node="n1", preemptible=False)
    _pods(m, "team-a", "wait", 1, preemptible=False)
    state = _explain(m, "team-a", "wait0")
    assert state.blocks == (Block("team-a", Check.MIN, ("cpu",)),)
    assert state.message() == ("Insufficient quota at team-a: "
                               "nonPreemptibleUsed + request > min in [cpu]")
    assert "nonPreemptibleUsed cpu:1" in state.lines()[-1]


def test_a_full_parent_blocks_only_with_the_parent_check_and_a_fitting_pod_says_so() -> None:
    m = _tree("8", make_quota("dept", {"cpu": "2"}, is_parent=True),
              make_quota("team-a", {"cpu": "4"}, parent="dept"),
              make_quota("team-b", {"cpu": "4"}, parent="dept"))
    _pods(m, "team-b", "b", 2, node="n1")  # team-b over-uses dept's runtime of 2
    _pods(m, "team-a", "a", 1)
    blocked = _explain(m, "team-a", "a0", QuotaChecks(check_parent=True))
    assert blocked.blocks == (Block("dept", Check.RUNTIME, ("cpu",)),)
    assert blocked.lines()[0].endswith("blocked at dept: used + request > runtime in [cpu].")
    assert blocked.lines()[3].startswith("    dept: max cpu:2, runtime cpu:2, used cpu:2")
    assert blocked.lines()[3].endswith("<- used + request > runtime in [cpu]")
    fits = _explain(m, "team-a", "a0")
    assert fits.blocks == ()
    assert fits.message() == "fits quota team-a at every level checked"
    assert fits.lines()[0].endswith("it fits at every level checked.")


def test_hints_name_a_sibling_that_does_not_lend_and_mins_scaled_down() -> None:
    m = _tree("8", make_quota("team-a", {"cpu": "8"}, {"cpu": "6"}),
              make_quota("team-b", {"cpu": "8"}, {"cpu": "6"}, allow_lent=False))
    _pods(m, "team-a", "a", 6)
    state = _explain(m, "team-a", "a0")
    # Σ min 12 over the cluster's 8 cpu: both mins scaled to 4; team-b keeps its 4 idle.
    assert state.blocks == ()
    assert state.hints == (
        f"the mins of {ROOT_QUOTA_NAME}'s 2 child(ren) sum to cpu:12, more than its runtime "
        "cpu:8: each scalable child's min is scaled down in proportion (enableMinQuotaScale)",
        "team-a's min cpu:6 is scaled down to autoScaleMin cpu:4 while "
        f"{ROOT_QUOTA_NAME} is short: its runtime may stay below its min",
        f"team-b, beside team-a under {ROOT_QUOTA_NAME}, does not lend "
        "(allow-lent-resource: false): it keeps its min cpu:6 while using cpu:0")
    assert "autoScaleMin cpu:4" in state.lines()[-4]


def test_the_why_pending_entry_of_a_pod_waiting_for_quota_has_its_quota_section() -> None:
    c = QuotaCluster(cpu="8")
    try:
        c.add_quota(make_quota("dept", {"cpu": "6"}, {"cpu": "2"}, is_parent=True))
        c.add_quota(make_quota("team-a", {"cpu": "3"}, {"cpu": "1"}, parent="dept"))
        c.add_quota(make_quota("team-b", {"cpu": "3"}, {"cpu": "1"}, parent="dept"))
        names = cpu_pods(c, "a", "team-a", 4)
        cpu_pods(c, "plain", "", 1)  # the default quota: it fits, nothing to say
        assert len(c.schedule()) == 4
        [left] = [n for n in names if "default/" + n not in c.binder.bindings]
        entry = c.sched.diagnosis_of(f"default/{left}")
        assert entry is not None
        assert [level["name"] for level in entry["quota"]["path"]] == [
            ROOT_QUOTA_NAME, "dept", "team-a"]
        assert entry["quota"]["blocked"] == [
            {"quota": "team-a", "check": "runtime", "dimensions": ["cpu"]}]
        assert entry["quota"]["hints"] == []  # Σ min 2 ≤ dept's min 2, everyone lends
        assert any(line.endswith("<- used + request > runtime in [cpu]")
                   for line in entry["explain"])
        assert c.sched.diagnosis_of("default/plain0") is None
    finally:
        c.stop()
