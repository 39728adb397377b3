"""Where a host application's cgroup is: upstream `pkg/koordlet/util`'s
`GetHostAppCgroupRelativePath`.

A host application (NodeSLO ``spec.hostApplications``) is a process group outside pods. Its
cgroup is ``<base>/<parentDir>/<relativePath>``, the base being the cgroup root or a kube-QoS
dir of this node's driver; without a ``cgroupPath`` it is ``host-latency-sensitive/<name>``
for LSE/LSR/LS, ``host-best-effort/<name>`` for BE and ``<name>`` otherwise. Unknown bases are
the root, as upstream. The dir is relative to the cgroup root, like every layout dir.
"""

from __future__ import annotations

import posixpath

from api.errors import MalformedValueError
from api.extension.qos import KubeQoSClass, QoSClass
from api.slo.v1alpha1.host_application import CgroupBaseType, HostApplicationSpec
from koordlet.util.system.cgroup_driver import CgroupDriver, kube_qos_relative_dir

DEFAULT_HOST_LS_CGROUP_DIR = "host-latency-sensitive"
DEFAULT_HOST_BE_CGROUP_DIR = "host-best-effort"

_BASE_KUBE_QOS: dict[str, KubeQoSClass] = {
    CgroupBaseType.KUBEPODS: KubeQoSClass.GUARANTEED,
    CgroupBaseType.KUBEPODS_BURSTABLE: KubeQoSClass.BURSTABLE,
    CgroupBaseType.KUBEPODS_BESTEFFORT: KubeQoSClass.BEST_EFFORT,
}
_LS_CLASSES = frozenset({QoSClass.LSE, QoSClass.LSR, QoSClass.LS})


def _join(*parts: str) -> str:
    """Go's `filepath.Join` of relative layout parts: empty parts skipped, the result cleaned;
    a leading "/" stays relative to the cgroup root (upstream joins it under the root too)."""
    joined = "/".join(p for p in parts if p)
    return posixpath.normpath(joined).lstrip("/") if joined else ""


def host_app_relative_dir(driver: CgroupDriver, app: HostApplicationSpec) -> str:
    """The application's cgroup dir relative to the cgroup root.

    Raises MalformedValueError (key ``cgroupPath`` or ``name``) when the dir would leave the
    cgroup root ("../" after cleaning): upstream would read and write outside its hierarchy.
    """
    name = app.name or ""
    if app.cgroup_path is None:
        base = (DEFAULT_HOST_LS_CGROUP_DIR if app.qos in _LS_CLASSES
                else DEFAULT_HOST_BE_CGROUP_DIR if app.qos == QoSClass.BE else "")
        rel, key = _join(base, name), "name"
    else:
        path = app.cgroup_path
        kube_qos = _BASE_KUBE_QOS.get(path.base or "")
        base = kube_qos_relative_dir(driver, kube_qos) if kube_qos is not None else ""
        rel, key = _join(base, path.parent_dir or "", path.relative_path or ""), "cgroupPath"
    if rel == ".." or rel.startswith("../"):
        raise MalformedValueError(key, f"host application {name!r}: cgroup dir {rel!r} is "
                                       "outside the cgroup root")
    return rel


__all__ = ["DEFAULT_HOST_BE_CGROUP_DIR", "DEFAULT_HOST_LS_CGROUP_DIR", "host_app_relative_dir"]
