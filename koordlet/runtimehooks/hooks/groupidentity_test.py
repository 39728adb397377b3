"""GroupIdentity: bvt by QoS class, and nothing at all where the kernel lacks group identity."""

from __future__ import annotations

import logging

import pytest

from api.extension.qos import LABEL_POD_QOS
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.groupidentity import (
    GroupIdentityRule,
    group_identity,
    host_app_group_identity,
    system_supported,
)
from koordlet.runtimehooks.protocol import HookRequest, HostAppRequest, Resources
from koordlet.runtimehooks.rule import Rules
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


def test_system_supported_by_kubepods_file_or_sysctl(tmp_path) -> None:
    """Trees laid out under a temp dir as an Anolis kernel (cpu.bvt_warp_ns in the kubepods
    dir, or only the sysctl) and an upstream kernel (neither) have them."""
    kubepods = tmp_path / "cgroup" / "cpu" / "kubepods"
    kubepods.mkdir(parents=True)
    proc = tmp_path / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)

    def supported() -> bool:  # a fresh env: kubepods support is cached per env
        env = CgroupEnv(root=str(tmp_path / "cgroup"), driver=CgroupDriver.CGROUPFS)
        return system_supported(env, str(proc))

    assert not supported()
    (proc / "sys" / "kernel" / "sched_group_identity_enabled").write_text("0\n")
    assert supported()
    (proc / "sys" / "kernel" / "sched_group_identity_enabled").unlink()
    (kubepods / "cpu.bvt_warp_ns").write_text("0\n")
    assert supported()
