"""CoreSched: the rule from NodeSLO, each pod's group, and the cookies :class:`CoreSched` gives
the pods' processes, against a fake kernel (the :class:`CoreSchedOps` seam) and a cgroup v1 tree
of plain `cgroup.procs` files laid out in a temp dir as the kernel has it (upstream
`hooks/coresched/rule_test.go`, `core_sched_test.go`, `helper_test.go`)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from api.extension.qos import QoSClass
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.coresched import (
    ClassParam,
    CoreSched,
    CoreSchedRule,
    PrctlCoreSched,
    pod_enabled_and_group,
    probe_supported,
)
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv


def spec(policy: str, **classes: tuple[bool, bool]) -> NodeSLOSpec:
    """``classes``: name → (enable, coreExpeller)."""
    return NodeSLOSpec.model_validate({"resourceQOSStrategy": {
        "policies": {"cpuPolicy": policy},
        **{f"{name}Class": {"cpuQOS": {"enable": on, "coreExpeller": expeller}}
           for name, (on, expeller) in classes.items()}}})


ON, EXPELLER, OFF = ClassParam(True), ClassParam(True, True), ClassParam()
# upstream's usual node: LSR and LS enabled expellers, BE enabled
RULE = CoreSchedRule.from_node_slo(spec("coreSched", lsr=(True, True), ls=(True, True),
                                        be=(True, False)))


def test_rule_only_under_the_core_sched_policy() -> None:
    assert RULE.enable
    assert RULE.by_qos == {"LSE": EXPELLER, "LSR": EXPELLER, "LS": EXPELLER, "BE": ON}
    assert RULE.by_kube_qos == {"Guaranteed": EXPELLER, "Burstable": EXPELLER,
                                "BestEffort": ON}
    off = CoreSchedRule.from_node_slo(spec("groupIdentity", ls=(True, True), be=(True, False)))
    assert not off.enable and set(off.by_qos.values()) == {OFF}
    # Guaranteed pods without the label follow LS while LSR is disabled
    ls_only = CoreSchedRule.from_node_slo(spec("coreSched", lsr=(False, False), ls=(True, True)))
    assert ls_only.by_kube_qos["Guaranteed"] == EXPELLER and ls_only.by_qos[QoSClass.LSR] == OFF


def pod(uid: str, qos: str | None, kube_qos: str = "Burstable", group: str | None = None,
        policy: str | None = None, pids: int = 1, created: str = "2026-01-01T00:00:00Z") -> dict:
    labels = {"koordinator.sh/qosClass": qos} if qos else {}
    if group is not None:
        labels["koordinator.sh/core-sched-group-id"] = group
    if policy is not None:
        labels["koordinator.sh/core-sched-policy"] = policy
    return {"metadata": {"name": uid, "namespace": "ns", "uid": uid, "labels": labels,
                         "creationTimestamp": created},
            "status": {"phase": "Running", "qosClass": kube_qos, "containerStatuses": [
                {"name": f"c{i}", "containerID": f"containerd://{uid}-c{i}",
                 "state": {"running": {}}} for i in range(pids)]}}


@pytest.mark.parametrize(("the_pod", "rule", "want"), [
    (pod("a", "LS", group="g1"), RULE, (True, "g1-expeller")),
    (pod("a", "LS"), RULE, (True, "-expeller")),
    (pod("a", "BE", "BestEffort", group="g1"), RULE, (True, "g1")),
    (pod("a", "BE", "BestEffort", group="g1", policy="exclusive"), RULE, (True, "a")),
    (pod("a", "LS", group="g1", policy="exclusive"), RULE, (True, "a-expeller")),
    (pod("a", "BE", "BestEffort", group="g1", policy="none"), RULE, (False, "g1")),
    (pod("a", None, "BestEffort", group="g1"), RULE, (True, "g1")),
    (pod("a", None, "Guaranteed"), RULE, (True, "-expeller")),
    (pod("a", "BE", "BestEffort", group="g1"), CoreSchedRule(), (False, "g1")),
])
def test_pod_group(the_pod: dict, rule: CoreSchedRule, want: tuple[bool, str]) -> None:
    assert pod_enabled_and_group(rule, the_pod) == want


class FakeKernel:
    """Cookies by pid; a pid in ``gone`` has exited (ESRCH)."""

    def __init__(self) -> None:
        self.cookies: dict[int, int] = {}
        self.gone: set[int] = set()
        self.next_cookie = 100
        self.created: list[int] = []

    def _alive(self, pid: int) -> None:
        if pid in self.gone:
            raise OSError(errno.ESRCH, "no such process")

    def get(self, pid: int) -> int:
        self._alive(pid)
        return self.cookies.get(pid, 0)

    def create(self, pid: int) -> None:
        self._alive(pid)
        self.cookies[pid] = self.next_cookie
        self.created.append(pid)
        self.next_cookie += 1

    def assign(self, pid_from: int, pids: Sequence[int]) -> list[int]:
        cookie = self.get(pid_from)
        return self._set(pids, cookie)

    def clear(self, pids: Sequence[int]) -> list[int]:
        return self._set(pids, 0)

    def _set(self, pids: Sequence[int], cookie: int) -> list[int]:
        failed = [p for p in pids if p in self.gone]
        self.cookies.update({p: cookie for p in pids if p not in self.gone})
        return failed


class Node:
    """A cgroupfs v1 tree (only `cpu/.../cgroup.procs`) with one process per container."""

    def __init__(self, root: Path) -> None:
        self.env = CgroupEnv(root=str(root), v2=False, driver=CgroupDriver.CGROUPFS)
        self.root = root
        self.kernel = FakeKernel()
        self.core_sched = CoreSched(self.env, self.kernel)
        self.next_pid = 1000

    def start(self, the_pod: dict) -> dict:
        pod_dir = self.env.pod_dir(the_pod["status"]["qosClass"], the_pod["metadata"]["uid"])
        for status in the_pod["status"]["containerStatuses"]:
            path = Path(self.env.path("cgroup.procs",
                                      self.env.container_dir(pod_dir, status["containerID"])))
            path.parent.mkdir(parents=True)
            path.write_text(f"{self.next_pid}\n")
            self.next_pid += 1
        return the_pod

    def cookies(self, the_pod: dict) -> list[int]:
        pod_dir = self.env.pod_dir(the_pod["status"]["qosClass"], the_pod["metadata"]["uid"])
        out = []
        for status in the_pod["status"]["containerStatuses"]:
            path = self.env.path("cgroup.procs",
                                 self.env.container_dir(pod_dir, status["containerID"]))
            out += [self.kernel.cookies.get(int(p), 0) for p in Path(path).read_text().split()]
        return out


def test_groups_share_a_cookie_exclusive_pods_their_own_none_and_system_pods_the_default(
        tmp_path: Path) -> None:
    node = Node(tmp_path)
    ls1 = node.start(pod("ls1", "LS", group="g1", pids=2))
    ls2 = node.start(pod("ls2", "LS", group="g1", created="2026-01-02T00:00:00Z"))
    be = node.start(pod("be", "BE", "BestEffort", group="g1"))
    excl = node.start(pod("excl", "BE", "BestEffort", group="g1", policy="exclusive"))
    off = node.start(pod("off", "BE", "BestEffort", group="g1", policy="none"))
    system = node.start(pod("sys", "SYSTEM", group="g1"))
    node.kernel.cookies[1005] = 42  # "off" had a cookie
    node.kernel.cookies[1006] = 7  # the SYSTEM pod's cookie is left alone
    node.core_sched.refresh(RULE, [ls2, be, excl, off, system, ls1])
    c_ls = node.cookies(ls1)
    assert c_ls[0] != 0 and node.cookies(ls1) == [c_ls[0]] * 2 and node.cookies(ls2) == c_ls[:1]
    c_be, c_excl = node.cookies(be), node.cookies(excl)
    assert c_be[0] not in (0, c_ls[0]) and c_excl[0] not in (0, c_ls[0], c_be[0])
    assert node.cookies(off) == [0] and node.cookies(system) == [7]
    assert len(node.kernel.created) == 3  # one cookie per group: g1-expeller, g1, excl

    # A further round changes nothing; the rule switched off resets every cookie.
    node.core_sched.refresh(RULE, [ls1, ls2, be, excl, off, system])
    assert len(node.kernel.created) == 3
    node.core_sched.refresh(CoreSchedRule(), [ls1, ls2, be, excl, off, system])
    assert [c for p in (ls1, ls2, be, excl, off) for c in node.cookies(p)] == [0] * 6
    assert node.cookies(system) == [7]


def test_a_new_member_gets_the_groups_cookie_and_a_group_whose_processes_left_a_new_one(
        tmp_path: Path) -> None:
    node = Node(tmp_path)
    first = node.start(pod("a", "BE", "BestEffort", group="g"))
    node.core_sched.refresh(RULE, [first])
    cookie = node.cookies(first)[0]
    second = node.start(pod("b", "BE", "BestEffort", group="g"))
    node.core_sched.refresh(RULE, [first, second])
    assert node.cookies(second) == [cookie] and len(node.kernel.created) == 1

    node.kernel.gone.update({1000, 1001})  # both exited; their container restarted
    third = node.start(pod("c", "BE", "BestEffort", group="g"))
    node.core_sched.refresh(RULE, [third])
    assert node.cookies(third)[0] not in (0, cookie) and len(node.kernel.created) == 2


def test_containers_not_started_are_skipped(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.core_sched.refresh(RULE, [pod("a", "BE", "BestEffort", group="g")])  # no cgroup yet
    assert node.kernel.cookies == {}


def test_this_kernel_without_core_scheduling_is_said_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The real prctl(2) on this machine: skipped where the kernel has core scheduling."""
    ops = PrctlCoreSched()
    try:
        ops.get(0)
        pytest.skip("this kernel has core scheduling")
    except OSError:
        pass
    with caplog.at_level(logging.INFO, logger="koordlet.runtimehooks.hooks.coresched"):
        assert not probe_supported(ops, str(tmp_path))
    (record,) = caplog.records
    assert "no core scheduling on this node" in record.getMessage()


def test_the_anolis_sysctl_is_switched_on(tmp_path: Path) -> None:
    sysctl = tmp_path / "sys/kernel/sched_core"
    sysctl.parent.mkdir(parents=True)
    sysctl.write_text("0\n")
    assert probe_supported(FakeKernel(), str(tmp_path))
    assert sysctl.read_text().strip() == "1"
