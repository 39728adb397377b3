"""One cgroup hierarchy as koordlet sees it: root, version and driver together.

Upstream keeps these in package globals of `pkg/koordlet/util/system` (`Conf.CgroupRootDir`,
`UseCgroupsV2`, the detected driver) and builds paths with `GetCgroupFilePath` and
`cgroup_resource.go`'s `Path`; here one `CgroupEnv` is built at startup (or per test tree)
and passed to the executor, readers and hooks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import ClassVar

from api.extension.qos import KubeQoSClass
from koordlet.util.system.cgroup import ResourceUnsupportedError
from koordlet.util.system.cgroup_driver import (
    KUBE_ROOT,
    CgroupDriver,
    container_relative_dir,
    detect_cgroup_driver,
    is_cgroup_v2,
    kube_qos_relative_dir,
    pod_relative_dir,
)
from koordlet.util.system.cgroup_resource import (
    MAX_MEMO_PATHS,
    CgroupResource,
    SupportCheck,
    get_resource,
)
from koordlet.util.system.config import HOST_MODE_CGROUP_ROOT_DIR


def kube_path_prefix(kube_path: str) -> str:
    """The dirs above the kubepods root in ``--cgroup-kube-path`` ("kubepods/" → ""): the
    ``prefix`` of a ``CgroupEnv``."""
    parts = [part for part in kube_path.split("/") if part]
    if not parts or parts[-1] not in KUBE_ROOT.values():
        raise ValueError(f"--cgroup-kube-path={kube_path!r}: must end in kubepods/ or "
                         "kubepods.slice/")
    return "/".join(parts[:-1])


@dataclass(slots=True)
class CgroupEnv:
    """Fixed once built: the paths it hands out are memoized on root, version and prefix."""

    root: str = HOST_MODE_CGROUP_ROOT_DIR
    v2: bool = False
    driver: CgroupDriver = CgroupDriver.SYSTEMD
    # Relative dir prepended to every layout dir: "" on a node; a test-owned subtree in tests.
    prefix: str = ""
    _kubepods_support: dict[str, bool] = field(default_factory=dict, repr=False)
    # (subsystem, layout dir, file name or "" for the dir) -> absolute path: the qosmanager's
    # strategies ask for thousands of paths a round, nearly all of them asked for before.
    _paths: dict[tuple[str, str, str], str] = field(default_factory=dict, repr=False,
                                                   compare=False)
    MAX_MEMO_PATHS: ClassVar[int] = MAX_MEMO_PATHS

    @classmethod
    def detect(cls, cgroup_root_dir: str, prefix: str = "") -> CgroupEnv:
        v2 = is_cgroup_v2(cgroup_root_dir)
        # The kubepods dirs are looked for under the cpu subsystem on v1 (upstream does too).
        parent = os.path.join(cgroup_root_dir, "" if v2 else "cpu", prefix)
        return cls(root=cgroup_root_dir, v2=v2, driver=detect_cgroup_driver(parent), prefix=prefix)

    def resource(self, resource_type: str) -> CgroupResource:
        return get_resource(resource_type, self.v2)

    def dir_path(self, resource: CgroupResource, parent_dir: str) -> str:
        """Absolute dir of `parent_dir` (a relative layout dir) for `resource`'s subsystem."""
        key = (resource.subsystem, parent_dir, "")
        path = self._paths.get(key)
        if path is None:
            path = self._memo(key, resource.dir_path(self.root, self.prefix, parent_dir))
        return path

    def file_path(self, resource: CgroupResource, parent_dir: str) -> str:
        """Absolute path of `resource`'s file in `parent_dir` (a relative layout dir)."""
        key = (resource.subsystem, parent_dir, resource.file_name)
        path = self._paths.get(key)
        if path is None:
            path = self._memo(key, resource.path(self.root, self.prefix, parent_dir))
        return path

    def path(self, resource_type: str, parent_dir: str) -> str:
        return self.file_path(self.resource(resource_type), parent_dir)

    def _memo(self, key: tuple[str, str, str], path: str) -> str:
        if len(self._paths) >= self.MAX_MEMO_PATHS:
            self._paths.clear()
        self._paths[key] = path
        return path

    def check_supported(self, resource: CgroupResource, parent_dir: str) -> None:
        """Raises `ResourceUnsupportedError` when the kernel lacks the file (the resource's
        `check`, upstream's `SupportedIfFileExists*`)."""
        if resource.check is SupportCheck.ALWAYS:
            return
        if resource.check is SupportCheck.FILE_EXISTS:
            target = self.file_path(resource, parent_dir)
            if not os.path.exists(target):
                raise ResourceUnsupportedError(resource.type, f"file {target} not exist")
            return
        supported = self._kubepods_support.get(resource.type)
        if supported is None:
            kubepods = self.dir_path(resource, self.kube_qos_dir(KubeQoSClass.GUARANTEED))
            supported = os.path.exists(os.path.join(kubepods, resource.file_name))
            self._kubepods_support[resource.type] = supported
        if not supported:
            raise ResourceUnsupportedError(resource.type, "file not exist in kubepods dir")

    def kube_qos_dir(self, qos: KubeQoSClass | str) -> str:
        return kube_qos_relative_dir(self.driver, qos)

    def pod_dir(self, qos: KubeQoSClass | str, uid: str) -> str:
        return pod_relative_dir(self.driver, qos, uid)

    def container_dir(self, pod_dir: str, container_id: str) -> str:
        return container_relative_dir(self.driver, pod_dir, container_id)

    def be_dir(self) -> str:
        """The node-level BE cgroup (upstream `GetPodQoSRelativePath(BestEffort)`): target of
        cpusuppress, source of BE metrics."""
        return self.kube_qos_dir(KubeQoSClass.BEST_EFFORT)
