from pathlib import Path

from api.extension.qos import KubeQoSClass
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.fake_tree import ensure_fake_v1_tree, ensure_pod_dirs, fake_v1_env


def pod(uid: str, phase: str, qos: str) -> dict:
    return {"metadata": {"uid": uid},
            "status": {"phase": phase, "qosClass": qos,
                       "containerStatuses": [{"name": "c", "containerID": f"containerd://{uid}c"}]}}


def test_fake_tree_is_a_cgroupfs_v1_layout_with_dirs_for_running_pods(tmp_path: Path) -> None:
    assert ensure_fake_v1_tree(str(tmp_path), cpus=4)
    assert not ensure_fake_v1_tree(str(tmp_path), cpus=4)  # an existing tree is kept
    env = CgroupEnv.detect(str(tmp_path))
    assert (env.v2, env.driver) == (False, CgroupDriver.CGROUPFS)
    assert fake_v1_env(str(tmp_path)) == env
    be = env.kube_qos_dir(KubeQoSClass.BEST_EFFORT)
    assert Path(env.path("cpu.cfs_quota_us", be)).read_text().strip() == "-1"
    assert Path(env.path("cpu.cfs_period_us", be)).read_text().strip() == "100000"
    assert Path(env.path("cpuset.cpus", be)).read_text().strip() == "0-3"
    assert Path(tmp_path, "memory/kubepods/burstable/memory.limit_in_bytes").is_file()

    ensure_pod_dirs(env, [pod("u1", "Running", "BestEffort"), pod("u2", "Pending", "Burstable")],
                    cpus=4)
    assert Path(tmp_path, "cpu/kubepods/besteffort/podu1/u1c/cpu.cfs_quota_us").is_file()
    assert Path(tmp_path, "memory/kubepods/besteffort/podu1/memory.limit_in_bytes").is_file()
    # an Anolis kernel's memcg QoS files, so CgroupReconcile's support check passes
    assert Path(env.path("memory.min", env.kube_qos_dir(KubeQoSClass.GUARANTEED))).is_file()
    assert Path(tmp_path, "memory/kubepods/besteffort/podu1/u1c/memory.high").is_file()
    assert not Path(tmp_path, "cpu/kubepods/burstable/podu2").exists()
