"""cgreconcile on this machine's real cgroup v1, in a test-owned subtree (kubepods, the QoS
dirs, a pod and its container, cgroupfs layout).

An upstream kernel's v1 memory controller has none of the files the strategy writes
(`memory.min`/`low`/`high`, the wmark, priority and oom.group files are Anolis additions to
v1): there a tick must write nothing, create nothing, raise nothing, leave the files kubelet
owns (`memory.limit_in_bytes`) alone, and say once per file that it is skipped. On a kernel
that has them, the pod's protection is written instead.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.cgreconcile import CgroupReconcile
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node, pod_with_containers
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import CGROUP_RECONCILE

GI = 1 << 30
# the files the NodeSLO below asks for (the fields it leaves unset are not written)
FILES = ("memory.min", "memory.low", "memory.high", "memory.wmark_ratio", "memory.oom.group")


def test_real_v1_tree(caplog) -> None:
    pod = pod_with_containers("ls", "LS", "Burstable", [({"memory": "1Gi"}, {"memory": "2Gi"})])
    slo = NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {
        "resourceQOSStrategy": {"lsClass": {"memoryQOS": {
            "enable": True, "minLimitPercent": 100, "lowLimitPercent": 100,
            "throttlingPercent": 50, "wmarkRatio": 95, "oomKillGroup": 1}}}}})
    with real_cgroup_v1_tree() as env:
        pod_dir = env.pod_dir("Burstable", "ls")
        container_dir = env.container_dir(pod_dir, "containerd://ls-c0")
        for d in (env.kube_qos_dir("BestEffort"), container_dir):
            make_real_cgroup_dir(env, d)
        memory = Path(env.root, "memory", env.prefix)
        limits = {d: (memory / d / "memory.limit_in_bytes").read_text()
                  for d in (pod_dir, container_dir)}
        gate = koordlet_feature_gate.copy()
        gate.set_enabled(CGROUP_RECONCILE, True)
        ctx = Context(env=env, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                      states=FakeStates(node("2"), slo, [pod]), feature_gate=gate)
        strategy = CgroupReconcile(ctx)
        assert strategy.enabled()
        with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.cgreconcile"):
            strategy.run_once()
            strategy.run_once()
        kubepods = memory / env.kube_qos_dir("Guaranteed")
        if (kubepods / "memory.min").exists():  # an Anolis kernel
            assert (memory / pod_dir / "memory.min").read_text().strip() == str(GI)
            assert (memory / container_dir / "memory.low").read_text().strip() == str(GI)
            return
        skipped = [r.getMessage() for r in caplog.records if "lacks" in r.getMessage()]
        lacking = [f for f in FILES if not (kubepods / f).exists()]
        assert lacking and len(skipped) == len(lacking)  # once each, over two ticks
        assert all(any(f in m for m in skipped) for f in lacking)
        for d, before in limits.items():
            assert (memory / d / "memory.limit_in_bytes").read_text() == before
            assert not any(os.path.exists(memory / d / f) for f in lacking)
