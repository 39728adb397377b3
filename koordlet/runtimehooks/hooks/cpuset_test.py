"""CPUSetAllocator: the container cpuset in upstream's priority order, quota −1 for cpuset pods."""

from __future__ import annotations

import json

import pytest

from api.errors import MalformedValueError
from api.extension.qos import LABEL_POD_QOS
from koordlet.runtimehooks.hooks.cpuset import CPUSetRule, CPUSharePool, cpuset
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import Rules

STATUS = "scheduling.koordinator.sh/resource-status"
RULE = CPUSetRule(
    share_pools=[CPUSharePool(0, 0, "0-7"), CPUSharePool(1, 1, "16-23")],
    be_share_pools=[CPUSharePool(0, 0, "0-15"), CPUSharePool(1, 1, "16-31")],
    system_qos_cpuset="8-9",
)


def request(qos: str = "", status: dict | None = None, parent: str = "kubepods/burstable/podx",
            container: str | None = "c0") -> HookRequest:
    labels = {LABEL_POD_QOS: qos} if qos else {}
    annotations = {STATUS: json.dumps(status)} if status is not None else {}
    return HookRequest("p", "ns", "x", labels, annotations, parent, {}, container_name=container)


def test_resource_status_cpuset_wins_and_unsets_quota() -> None:
    req = request("LSR", {"cpuset": "2-3"})
    assert cpuset(req, Rules(cpuset=RULE)) == Resources(cpuset="2-3", cfs_quota=-1)
    assert cpuset(req, Rules()) == Resources(cpuset="2-3", cfs_quota=-1)  # no rule needed
    pod = request("LSR", {"cpuset": "2-3"}, container=None)
    assert cpuset(pod, Rules()) == Resources(cfs_quota=-1)
    assert cpuset(req, Rules(disable_unset_cpu_quota=True)) == Resources(cpuset="2-3")


@pytest.mark.parametrize(("qos", "status", "parent", "policy", "be_cpu_manager", "expected"), [
    ("LS", None, "kubepods/burstable/podx", "none", False, "0-7,16-23"),
    ("LS", {"numaNodeResources": [{"node": 1, "resources": {"cpu": "2"}}]},
     "kubepods/burstable/podx", "none", False, "16-23"),
    ("BE", {"numaNodeResources": [{"node": 0, "resources": {"kubernetes.io/batch-cpu": "500"}}]},
     "kubepods/besteffort/podx", "none", True, "0-15"),
    # BE NUMA pools only with BECPUManager: otherwise falls through to "do not change".
    ("BE", {"numaNodeResources": [{"node": 0, "resources": {"kubernetes.io/batch-cpu": "500"}}]},
     "kubepods/besteffort/podx", "none", False, ""),
    ("SYSTEM", None, "kubepods/burstable/podx", "none", False, "8-9"),
    ("", None, "kubepods/besteffort/podx", "none", False, ""),
    ("", None, "kubepods/podx", "static", False, None),
    ("", None, "kubepods/podx", "none", False, "0-7,16-23"),
])
def test_cpuset_from_the_rule(qos, status, parent, policy, be_cpu_manager, expected) -> None:
    rule = CPUSetRule(RULE.share_pools, RULE.be_share_pools, policy, RULE.system_qos_cpuset)
    rules = Rules(cpuset=rule, be_cpu_manager_enabled=be_cpu_manager)
    assert cpuset(request(qos, status, parent), rules).cpuset == expected


def test_no_rule_yet_leaves_the_cpuset() -> None:
    assert cpuset(request("LS"), Rules()) == Resources()


def test_invalid_resource_status_is_an_error() -> None:
    req = HookRequest("p", "ns", "x", {}, {STATUS: "{oops"}, "kubepods/podx", {},
                      container_name="c0")
    with pytest.raises(MalformedValueError, match="resource-status"):
        cpuset(req, Rules(cpuset=RULE))
