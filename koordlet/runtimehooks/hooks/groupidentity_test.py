"""GroupIdentity: bvt by QoS class, and nothing at all where the kernel lacks group identity."""

from __future__ import annotations

import logging

import pytest

from api.extension.qos import LABEL_POD_QOS
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule, group_identity
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import Rules

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
