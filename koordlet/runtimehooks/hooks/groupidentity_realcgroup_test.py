"""GroupIdentity on this machine's real cgroup v1, in a test-owned subtree (kubepods and the
QoS dirs, cgroupfs layout).

An upstream kernel has no group identity (cpu.bvt_warp_ns and the sysctl
`kernel.sched_group_identity_enabled` are Alibaba Cloud Linux / Anolis additions): the probe says
so in one line, and a NodeSLO that enables it makes a reconcile round write nothing, create
nothing and raise nothing.
"""

from __future__ import annotations

import logging
import os

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.runtimehooks.cgroupapply import CgroupApplier, PodReconciler
from koordlet.runtimehooks.hooks.groupidentity import BVT_FILE, probe_supported
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.rule_update import RuleUpdater
from koordlet.statesinformer.callbacks import RegisterType
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree

SLO = NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {"resourceQOSStrategy": {
    "lsClass": {"cpuQOS": {"enable": True, "groupIdentity": 2}},
    "beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}}}})


def test_real_v1_kernel_without_group_identity(caplog: pytest.LogCaptureFixture) -> None:
    with real_cgroup_v1_tree() as env:
        qos_dirs = ("kubepods", "kubepods/burstable", "kubepods/besteffort")
        for qos_dir in qos_dirs:
            make_real_cgroup_dir(env, qos_dir)
        if (os.path.exists(env.path(BVT_FILE, "kubepods"))
                or os.path.exists("/proc/sys/kernel/sched_group_identity_enabled")):
            pytest.skip("this kernel has group identity")
        with caplog.at_level(logging.INFO, logger="koordlet.runtimehooks.hooks.groupidentity"):
            supported = probe_supported(env, "/proc")
        assert not supported
        assert len(caplog.records) == 1 and "no group identity" in caplog.text
        rules = Rules(group_identity_supported=supported)
        reconciler = PodReconciler(lambda: [], rules, CgroupApplier(env, ResourceUpdateExecutor()))
        updater = RuleUpdater(rules, lambda: SLO, lambda: None, reconciler.reconcile_once)
        updater.callback(RegisterType.NODE_SLO_SPEC, None)
        assert rules.group_identity is not None  # the rule is kept, only nothing is written
        assert reconciler.reconcile_once() == []
        for qos_dir in qos_dirs:
            assert not os.path.exists(env.path(BVT_FILE, qos_dir))
