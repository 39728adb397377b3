"""Host application cgroup dirs, as upstream's `GetHostAppCgroupRelativePath` cases."""

import pytest

from api.errors import MalformedValueError
from api.slo.v1alpha1.host_application import CgroupPath, HostApplicationSpec
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.host_app import host_app_relative_dir

CGROUPFS, SYSTEMD = CgroupDriver.CGROUPFS, CgroupDriver.SYSTEMD


def app(qos: str | None = None, base: str | None = None, parent: str | None = None,
        rel: str | None = None, name: str = "nginx") -> HostApplicationSpec:
    path = None if base is None and parent is None and rel is None else CgroupPath(
        base=base, parent_dir=parent, relative_path=rel)
    return HostApplicationSpec(name=name, qos=qos, cgroup_path=path)


@pytest.mark.parametrize("spec,driver,want", [
    (app("LS"), CGROUPFS, "host-latency-sensitive/nginx"),
    (app("LSR"), SYSTEMD, "host-latency-sensitive/nginx"),
    (app("BE"), CGROUPFS, "host-best-effort/nginx"),
    (app(None), CGROUPFS, "nginx"),  # QoS none: right under the root
    (app("LS", "CgroupRoot", "host-latency-sensitive/", "nginx/"), CGROUPFS,
     "host-latency-sensitive/nginx"),
    (app("LS", "Kubepods", "host", "nginx"), CGROUPFS, "kubepods/host/nginx"),
    (app("LS", "KubepodsBurstable", "host", "nginx"), SYSTEMD,
     "kubepods.slice/kubepods-burstable.slice/host/nginx"),
    (app("BE", "KubepodsBesteffort", "host-be", "nginx"), CGROUPFS,
     "kubepods/besteffort/host-be/nginx"),
    (app("BE", "KubepodsBesteffort", "host-be", "nginx"), SYSTEMD,
     "kubepods.slice/kubepods-besteffort.slice/host-be/nginx"),
    (app("LS", "Unknown", "host", "nginx"), CGROUPFS, "host/nginx"),  # unknown base: root
    (app("LS", "CgroupRoot", "/host/", "/nginx"), CGROUPFS, "host/nginx"),  # Go's Join
    (app("LS", "Kubepods", "a/../b", "nginx"), CGROUPFS, "kubepods/b/nginx"),
])
def test_host_app_dir(spec: HostApplicationSpec, driver: CgroupDriver, want: str) -> None:
    assert host_app_relative_dir(driver, spec) == want


@pytest.mark.parametrize("spec,key", [
    (app("LS", "CgroupRoot", "..", "etc"), "cgroupPath"),
    (app("BE", "KubepodsBesteffort", "../../..", "x"), "cgroupPath"),
    (app(None, name="../x"), "name"),
])
def test_dir_outside_the_cgroup_root_is_malformed(spec: HostApplicationSpec, key: str) -> None:
    with pytest.raises(MalformedValueError) as err:
        host_app_relative_dir(CGROUPFS, spec)
    assert err.value.key == key and "outside the cgroup root" in str(err.value)
