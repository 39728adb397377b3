"""GroupIdentity: bvt by QoS class on pods and kube-QoS dirs, and nothing at all where the
kernel lacks group identity."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from api.extension.qos import LABEL_POD_QOS, KubeQoSClass
from api.slo.v1alpha1 import NodeSLOSpec
from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.hooks.groupidentity import (
    GroupIdentityRule,
    group_identity,
    group_identity_kube_qos,
    host_app_group_identity,
    probe_supported,
    sysctl_if_present,
)
from koordlet.runtimehooks.protocol import HookRequest, HostAppRequest, Resources
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.rule_update import RuleUpdater
from koordlet.statesinformer.callbacks import RegisterType
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv

RULE = GroupIdentityRule(lsr_value=2, ls_value=2, be_value=-1, lsr_enabled=True,
                         ls_enabled=True, be_enabled=True)


def request(qos: str, parent: str = "kubepods/podx", annotations=None) -> HookRequest:
    labels = {LABEL_POD_QOS: qos} if qos else {}
    return HookRequest("p", "ns", "x", labels, annotations or {}, parent, {})


@pytest.mark.parametrize(("qos", "parent", "annotations", "bvt"), [
    ("LSR", "kubepods/podx", None, 2),
    ("LSE", "kubepods/podx", None, 2),
    ("LS", "kubepods/burstable/podx", None, 2),
    ("LS", "kubepods/burstable/podx", {"koordinator.sh/cpuQOS": '{"enable":true,'
                                       '"groupIdentity":1}'}, 1),
    ("LS", "kubepods/burstable/podx", {"koordinator.sh/cpuQOS": '{"groupIdentity":1}'}, 0),
    ("BE", "kubepods/besteffort/podx", None, -1),
    ("", "kubepods/besteffort/podx", None, -1),
    ("", "kubepods/burstable/podx", None, 2),
    ("", "kubepods/podx", None, 2),
])
def test_bvt_by_qos(qos, parent, annotations, bvt) -> None:
    rules = Rules(group_identity=RULE, group_identity_supported=True)
    assert group_identity(request(qos, parent, annotations), rules) == Resources(cpu_bvt=bvt)


def test_disabled_classes_get_zero() -> None:
    rules = Rules(group_identity=GroupIdentityRule(be_value=-1, be_enabled=False),
                  group_identity_supported=True)
    assert group_identity(request("BE"), rules) == Resources(cpu_bvt=0)


def test_unsupported_kernel_does_nothing_and_says_so(caplog) -> None:
    rules = Rules(group_identity=RULE, group_identity_supported=False)
    with caplog.at_level(logging.DEBUG, logger="koordlet.runtimehooks.hooks.groupidentity"):
        assert group_identity(request("BE"), rules) == Resources()
    assert "group identity unsupported" in caplog.text


def test_rule_from_node_slo() -> None:
    spec = NodeSLOSpec.model_validate({"resourceQOSStrategy": {
        "lsrClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
        "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
        "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}},
    }})
    assert GroupIdentityRule.from_node_slo(spec) == RULE
    spec = NodeSLOSpec.model_validate({"resourceQOSStrategy": {
        "policies": {"cpuPolicy": "coreSched"},
        "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}}})
    assert GroupIdentityRule.from_node_slo(spec) is None


def host_app(qos: str) -> HostAppRequest:
    return HostAppRequest("nginx", qos, "host-latency-sensitive/nginx")


@pytest.mark.parametrize(("qos", "bvt"), [
    ("LSE", 2), ("LSR", 2), ("LS", 2), ("BE", -1),
    # upstream's getHostQOSBvtValue: no value for the class -> the "none" value, 0; the
    # cgroup dir does not count (unlike a pod without a QoS label)
    ("SYSTEM", 0), ("", 0), ("unknown", 0),
])
def test_host_app_bvt_by_qos(qos: str, bvt: int) -> None:
    rules = Rules(group_identity=RULE, group_identity_supported=True)
    assert host_app_group_identity(host_app(qos), rules) == Resources(cpu_bvt=bvt)


def test_host_app_of_a_disabled_class_gets_zero() -> None:
    rules = Rules(group_identity=GroupIdentityRule(ls_value=2, ls_enabled=False),
                  group_identity_supported=True)
    assert host_app_group_identity(host_app("LS"), rules) == Resources(cpu_bvt=0)


def test_host_app_is_left_alone_without_kernel_support_or_rule(caplog) -> None:
    unsupported = Rules(group_identity=RULE, group_identity_supported=False)
    with caplog.at_level(logging.DEBUG, logger="koordlet.runtimehooks.hooks.groupidentity"):
        assert host_app_group_identity(host_app("BE"), unsupported) == Resources()
    assert "host application nginx left as it is" in caplog.text
    no_rule = Rules(group_identity=None, group_identity_supported=True)
    assert host_app_group_identity(host_app("BE"), no_rule) == Resources()


@pytest.mark.parametrize(("lsr", "ls", "be", "dirs"), [
    # upstream rule_test.go: parse normal rules / lsr disabled / lsr and ls disabled / all off
    ((True, 2), (True, 2), (True, -1), (0, 2, -1)),
    ((False, 0), (True, 2), (True, -1), (0, 2, -1)),
    ((False, 0), (False, 0), (True, -1), (0, 0, -1)),
    ((False, 0), (False, 0), (False, 0), (0, 0, 0)),
])
def test_kube_qos_dirs_get_the_ls_and_be_values(lsr, ls, be, dirs) -> None:
    classes = {f"{name}Class": {"cpuQOS": {"enable": on, "groupIdentity": value}}
               for name, (on, value) in (("lsr", lsr), ("ls", ls), ("be", be))}
    spec = NodeSLOSpec.model_validate({"resourceQOSStrategy": classes})
    rules = Rules(group_identity=GroupIdentityRule.from_node_slo(spec),
                  group_identity_supported=True)
    got = tuple(group_identity_kube_qos(qos, rules).cpu_bvt for qos in KubeQoSClass)
    assert got == dirs  # Guaranteed (kubepods), Burstable, BestEffort


def test_kube_qos_dirs_untouched_without_rule_or_kernel_support() -> None:
    assert group_identity_kube_qos(KubeQoSClass.BEST_EFFORT,
                                   Rules(group_identity_supported=True)) == Resources()
    assert group_identity_kube_qos(KubeQoSClass.BEST_EFFORT,
                                   Rules(group_identity=RULE)) == Resources()


def _anolis_v1_tree(root: Path) -> CgroupEnv:
    """A cgroup v1 `cpu` hierarchy laid out in a temp dir as an Anolis / Alibaba Cloud Linux
    kernel has it: every cpu cgroup has cpu.bvt_warp_ns, 0 when created (this machine's
    kernel has no such file, so a real tree cannot show the writes)."""
    for qos_dir in ("kubepods", "kubepods/burstable", "kubepods/besteffort",
                    f"kubepods/besteffort/pod{UID}"):
        path = root / "cpu" / qos_dir
        path.mkdir(parents=True)
        (path / "cpu.bvt_warp_ns").write_text("0\n")
    return CgroupEnv(root=str(root), v2=False, driver=CgroupDriver.CGROUPFS)


UID = "be-1"
SLO = NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {"resourceQOSStrategy": {
    "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
    "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}}}})


def test_a_node_slo_update_writes_the_kube_qos_dirs_and_pods(tmp_path: Path) -> None:
    env = _anolis_v1_tree(tmp_path)
    assert probe_supported(env, str(tmp_path / "proc"))
    rules = Rules(group_identity_supported=True)
    be_pod = {"metadata": {"name": "be", "namespace": "ns", "uid": UID,
                           "labels": {LABEL_POD_QOS: "BE"}},
              "spec": {"containers": []}, "status": {"phase": "Running",
                                                     "qosClass": "BestEffort"}}
    reconciler = PodReconciler(lambda: [be_pod], rules,
                               CgroupApplier(env, ResourceUpdateExecutor()))
    slo: list[NodeSLO] = []
    updater = RuleUpdater(rules, lambda: slo[0] if slo else None, lambda: None,
                          reconciler.reconcile_once)

    def bvt(relative_dir: str) -> str:
        return (tmp_path / "cpu" / relative_dir / "cpu.bvt_warp_ns").read_text().strip()

    updater.callback(RegisterType.NODE_SLO_SPEC, None)  # no NodeSLO yet: nothing written
    assert bvt("kubepods/besteffort") == "0"
    slo.append(SLO)
    updater.callback(RegisterType.NODE_SLO_SPEC, None)
    assert [bvt(d) for d in ("kubepods", "kubepods/burstable", "kubepods/besteffort",
                             f"kubepods/besteffort/pod{UID}")] == ["0", "2", "-1", "-1"]


def test_probe_finds_the_sysctl_or_says_once_that_the_kernel_lacks_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    env = CgroupEnv(root=str(tmp_path), v2=False, driver=CgroupDriver.CGROUPFS)
    (tmp_path / "cpu/kubepods").mkdir(parents=True)
    with caplog.at_level(logging.INFO, logger="koordlet.runtimehooks.hooks.groupidentity"):
        assert not probe_supported(env, str(tmp_path / "proc"))
    assert len(caplog.records) == 1
    assert "no group identity" in caplog.text and "cpu.bvt_warp_ns" in caplog.text
    sysctl = tmp_path / "proc/sys/kernel/sched_group_identity_enabled"
    sysctl.parent.mkdir(parents=True)
    sysctl.write_text("0\n")
    assert probe_supported(env, str(tmp_path / "proc"))


def test_the_sysctl_is_switched_on_once_a_class_is_enabled(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A newer Anolis kernel: group identity is off until its sysctl is 1, and core scheduling
    (`kernel.sched_core`) must be off for it."""
    env = _anolis_v1_tree(tmp_path)
    kernel = tmp_path / "proc/sys/kernel"
    kernel.mkdir(parents=True)
    (kernel / "sched_group_identity_enabled").write_text("0\n")
    (kernel / "sched_core").write_text("1\n")
    sysctl = sysctl_if_present(str(tmp_path / "proc"))
    assert sysctl == str(kernel / "sched_group_identity_enabled")
    rules = Rules(group_identity_supported=True, group_identity_sysctl=sysctl)
    reconciler = PodReconciler(lambda: [], rules, CgroupApplier(env, ResourceUpdateExecutor()))
    off = NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {}})
    slo = [off]
    updater = RuleUpdater(rules, lambda: slo[0], lambda: None, reconciler.reconcile_once)
    updater.callback(RegisterType.NODE_SLO_SPEC, None)  # no class enabled: left as it is
    assert (kernel / "sched_group_identity_enabled").read_text() == "0\n"
    slo[0] = SLO
    with caplog.at_level(logging.INFO, logger="koordlet.runtimehooks.hooks.groupidentity"):
        updater.callback(RegisterType.NODE_SLO_SPEC, None)
        reconciler.reconcile_once()
    assert (kernel / "sched_group_identity_enabled").read_text().strip() == "1"
    assert (kernel / "sched_core").read_text().strip() == "0"
    assert [r.getMessage() for r in caplog.records].count(
        f"GroupIdentity: group identity switched on by {sysctl}") == 1
    assert (tmp_path / "cpu/kubepods/besteffort/cpu.bvt_warp_ns").read_text().strip() == "-1"
