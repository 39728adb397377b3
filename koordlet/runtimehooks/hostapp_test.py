"""HostAppReconciler (upstream `host_app_reconciler.go`) on cgroup trees laid out under a temp
dir as an Anolis kernel has them (with `cpu.bvt_warp_ns`), v1 and v2: each NodeSLO host
application gets its QoS class's bvt; a NodeSLO change reconciles at once only when the
applications changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.runtimehooks.cgroupapply import CgroupApplier, HostAppReconciler
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule
from koordlet.runtimehooks.rule import Rules
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.fake_tree import ensure_fake_v1_tree, fake_v1_env
from koordlet.util.system.testing import fake_v2_tree

RULE = GroupIdentityRule(lsr_value=2, ls_value=2, be_value=-1, lsr_enabled=True,
                         ls_enabled=True, be_enabled=True)
LS_APP = HostApplicationSpec.model_validate({"name": "nginx", "qos": "LS"})
BE_APP = HostApplicationSpec.model_validate({
    "name": "yarn", "qos": "BE",
    "cgroupPath": {"base": "KubepodsBesteffort", "parentDir": "host-be", "relativePath": "yarn"}})
DIRS = {"nginx": "host-latency-sensitive/nginx", "yarn": "kubepods/besteffort/host-be/yarn"}


def tree(tmp_path: Path, version: int) -> CgroupEnv:
    """The kubepods dirs and both applications' dirs, each with cpu.bvt_warp_ns = 0."""
    if version == 1:
        ensure_fake_v1_tree(str(tmp_path), 4)
        env = fake_v1_env(str(tmp_path))
        dirs = [tmp_path / "cpu" / d for d in ("kubepods", *DIRS.values())]
    else:
        env = fake_v2_tree(tmp_path, ["kubepods/besteffort", *DIRS.values()])
        dirs = [tmp_path / d for d in ("kubepods", *DIRS.values())]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        (d / "cpu.bvt_warp_ns").write_text("0\n")
    return env


def bvt(env: CgroupEnv, app: str) -> int:
    return int(Path(env.path("cpu.bvt_warp_ns", DIRS[app])).read_text())


@pytest.mark.parametrize("version", [1, 2])
def test_each_app_gets_its_class_bvt(tmp_path: Path, version: int) -> None:
    env = tree(tmp_path, version)
    rules = Rules(group_identity=RULE, group_identity_supported=True)
    reconciler = HostAppReconciler(lambda: [LS_APP, BE_APP], rules,
                                   CgroupApplier(env, ResourceUpdateExecutor()))
    assert reconciler.reconcile_once() == []
    assert (bvt(env, "nginx"), bvt(env, "yarn")) == (2, -1)


def test_app_whose_cgroup_is_missing_is_skipped_and_the_rest_applied(tmp_path: Path) -> None:
    env = tree(tmp_path, 1)
    gone = HostApplicationSpec.model_validate({"name": "gone", "qos": "BE"})
    rules = Rules(group_identity=RULE, group_identity_supported=True)
    reconciler = HostAppReconciler(lambda: [gone, BE_APP], rules,
                                   CgroupApplier(env, ResourceUpdateExecutor()))
    assert reconciler.reconcile_once() == []
    assert bvt(env, "yarn") == -1
    assert not (tmp_path / "cpu" / "host-best-effort").exists()  # nothing created


def test_node_slo_change_reconciles_only_when_apps_changed(tmp_path: Path) -> None:
    """Upstream `appRefreshCallback`: the same applications wait for the next round."""
    env = tree(tmp_path, 1)
    apps = [LS_APP]
    rules = Rules(group_identity=RULE, group_identity_supported=True)
    reconciler = HostAppReconciler(lambda: apps, rules,
                                   CgroupApplier(env, ResourceUpdateExecutor()))
    reconciler.on_node_slo("NodeSLOSpec", None)  # first sight: reconciles
    assert bvt(env, "nginx") == 2
    Path(env.path("cpu.bvt_warp_ns", DIRS["nginx"])).write_text("0\n")
    reconciler.on_node_slo("NodeSLOSpec", None)  # unchanged: left to the next round
    assert bvt(env, "nginx") == 0
    apps.append(BE_APP)
    reconciler.on_node_slo("NodeSLOSpec", None)
    assert bvt(env, "yarn") == -1
