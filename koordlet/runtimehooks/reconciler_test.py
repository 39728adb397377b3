"""The reconciler planner: running pods' specs become exactly the cgroup writes upstream makes."""

from __future__ import annotations

import json

import pytest

from api.errors import MalformedValueError
from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule
from koordlet.runtimehooks.reconciler import CgroupUpdate, plan_host_app, plan_pod
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.testing import BE_LABELS, GI
from koordlet.util.system.cgroup_driver import CgroupDriver

UID = "6f1c3a52-0000-4e2c-b1d6-1234"


def be_pod(annotations: dict[str, str] | None = None, runtime_class: str | None = None) -> dict:
    spec: dict = {"containers": [
        {"name": "c0", "resources": {
            "requests": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "2Gi"},
            "limits": {"kubernetes.io/batch-cpu": "500", "kubernetes.io/batch-memory": "2Gi"}}},
    ], "initContainers": [
        {"name": "init", "resources": {"limits": {"kubernetes.io/batch-cpu": "9000"}}},
    ]}
    if runtime_class:
        spec["runtimeClassName"] = runtime_class
    return {
        "metadata": {"name": "be-0", "namespace": "default", "uid": UID, "labels": BE_LABELS,
                     "annotations": annotations or {}},
        "spec": spec,
        "status": {"qosClass": "BestEffort",
                   "containerStatuses": [{"name": "c0", "containerID": "containerd://abc"}]},
    }


def test_be_pod_on_systemd() -> None:
    pod_dir = ("kubepods.slice/kubepods-besteffort.slice/"
               "kubepods-besteffort-pod6f1c3a52_0000_4e2c_b1d6_1234.slice")
    container_dir = pod_dir + "/cri-containerd-abc.scope"
    assert plan_pod(be_pod(), Rules(), CgroupDriver.SYSTEMD) == [
        CgroupUpdate(pod_dir, "cpu.shares", "512"),
        CgroupUpdate(pod_dir, "cpu.cfs_quota_us", "50000"),  # init containers do not count
        CgroupUpdate(pod_dir, "memory.limit_in_bytes", str(2 * GI)),
        CgroupUpdate(container_dir, "cpu.shares", "512"),
        CgroupUpdate(container_dir, "cpu.cfs_quota_us", "50000"),
        CgroupUpdate(container_dir, "memory.limit_in_bytes", str(2 * GI)),
    ]


def test_cpuset_pod_with_oom_score_and_bvt_on_cgroupfs() -> None:
    annotations = {"scheduling.koordinator.sh/resource-status": json.dumps({"cpuset": "4-5"}),
                   "koordinator.sh/oom-score-adj": "-500"}
    rules = Rules(group_identity=GroupIdentityRule(be_value=-1, be_enabled=True),
                  group_identity_supported=True)
    pod_dir = f"kubepods/besteffort/pod{UID}"
    assert plan_pod(be_pod(annotations), rules, CgroupDriver.CGROUPFS) == [
        CgroupUpdate(pod_dir, "cpu.shares", "512"),
        CgroupUpdate(pod_dir, "cpu.cfs_quota_us", "-1"),
        CgroupUpdate(pod_dir, "memory.limit_in_bytes", str(2 * GI)),
        CgroupUpdate(pod_dir, "cpu.bvt_warp_ns", "-1"),
        CgroupUpdate(f"{pod_dir}/abc", "cpu.shares", "512"),
        CgroupUpdate(f"{pod_dir}/abc", "cpuset.cpus", "4-5"),
        CgroupUpdate(f"{pod_dir}/abc", "cpu.cfs_quota_us", "-1"),
        CgroupUpdate(f"{pod_dir}/abc", "memory.limit_in_bytes", str(2 * GI)),
        CgroupUpdate(f"{pod_dir}/abc", "oom_score_adj", "-500"),
    ]


def test_kata_pods_get_only_pod_writes() -> None:
    updates = plan_pod(be_pod(runtime_class="kata"), Rules(), CgroupDriver.CGROUPFS)
    assert {u.dir for u in updates} == {f"kubepods/besteffort/pod{UID}"}


def test_ls_pod_without_rules_gets_nothing() -> None:
    pod = be_pod()
    pod["metadata"]["labels"] = {"koordinator.sh/qosClass": "LS"}
    assert plan_pod(pod, Rules(), CgroupDriver.CGROUPFS) == []


def test_malformed_annotation_names_the_key() -> None:
    pod = be_pod({"scheduling.koordinator.sh/resource-status": "{bad"})
    with pytest.raises(MalformedValueError, match="resource-status"):
        plan_pod(pod, Rules(), CgroupDriver.CGROUPFS)


@pytest.mark.parametrize(("app", "driver", "want"), [
    ({"name": "yarn", "qos": "BE", "cgroupPath": {"base": "KubepodsBesteffort",
                                                  "relativePath": "hadoop-yarn/"}},
     CgroupDriver.SYSTEMD,
     [CgroupUpdate("kubepods.slice/kubepods-besteffort.slice/hadoop-yarn", "cpu.bvt_warp_ns",
                   "-1")]),
    ({"name": "nginx", "qos": "LS"}, CgroupDriver.CGROUPFS,
     [CgroupUpdate("host-latency-sensitive/nginx", "cpu.bvt_warp_ns", "2")]),
    ({"name": "agent", "qos": "SYSTEM"}, CgroupDriver.CGROUPFS,
     [CgroupUpdate("agent", "cpu.bvt_warp_ns", "0")]),
])
def test_host_app_gets_its_class_bvt_on_its_own_dir(app, driver, want) -> None:
    """Upstream registers only GroupIdentity at the host-application level."""
    rules = Rules(group_identity=GroupIdentityRule(lsr_value=2, ls_value=2, be_value=-1,
                                                   lsr_enabled=True, ls_enabled=True,
                                                   be_enabled=True),
                  group_identity_supported=True)
    assert plan_host_app(HostApplicationSpec.model_validate(app), rules, driver) == want


def test_host_app_without_group_identity_support_gets_nothing() -> None:
    app = HostApplicationSpec(name="nginx", qos="LS")
    rules = Rules(group_identity=GroupIdentityRule(ls_value=2, ls_enabled=True))
    assert plan_host_app(app, rules, CgroupDriver.CGROUPFS) == []
