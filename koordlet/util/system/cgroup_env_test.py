import pytest

from koordlet.util.system.cgroup_env import kube_path_prefix


def test_cgroup_kube_path_names_the_kubepods_root_and_its_parent_prefix() -> None:
    assert kube_path_prefix("kubepods/") == ""
    assert kube_path_prefix("/koordlet-test-1/kubepods/") == "koordlet-test-1"
    assert kube_path_prefix("a/b/kubepods.slice") == "a/b"
    with pytest.raises(ValueError, match="--cgroup-kube-path"):
        kube_path_prefix("a/b/")
