import pytest

from koordlet.util.system.cgroup_env import CgroupEnv, kube_path_prefix


def test_cgroup_kube_path_names_the_kubepods_root_and_its_parent_prefix() -> None:
    assert kube_path_prefix("kubepods/") == ""
    assert kube_path_prefix("/koordlet-test-1/kubepods/") == "koordlet-test-1"
    assert kube_path_prefix("a/b/kubepods.slice") == "a/b"
    with pytest.raises(ValueError, match="--cgroup-kube-path"):
        kube_path_prefix("a/b/")


@pytest.mark.parametrize("v2", [False, True])
def test_paths_are_the_registrys_and_their_memo_stays_bounded(
        v2: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    env = CgroupEnv(root="/host-cgroup/", v2=v2, prefix="test-1")
    pod = env.pod_dir("Burstable", "uid-1")
    for resource_type in ("memory.min", "cpu.cfs_quota_us", "cpuset.cpus", "tasks"):
        resource = env.resource(resource_type)
        expected = resource.path(env.root, env.prefix, pod)
        assert env.path(resource_type, pod) == expected
        assert env.path(resource_type, pod) == expected  # memoized: the same answer
        assert env.dir_path(resource, pod) == resource.dir_path(env.root, env.prefix, pod)
    assert env.path("memory.min", "") == ("/host-cgroup/test-1/memory.min" if v2 else
                                          "/host-cgroup/memory/test-1/memory.min")

    monkeypatch.setattr(CgroupEnv, "MAX_MEMO_PATHS", 8)
    for i in range(100):  # pods come and go
        assert env.path("memory.min", env.pod_dir("BestEffort", f"u{i}")).endswith(
            f"u{i}.slice/memory.min")
    assert len(env._paths) <= 8
