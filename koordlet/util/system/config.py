"""System paths of koordlet: upstream `pkg/koordlet/util/system/config.go`.

koordlet runs in a DaemonSet with the host's directories mounted under `/host-*` (dsMode,
upstream's default) or directly on the host (hostMode, the values for this machine's
`/sys/fs/cgroup`). The config is passed explicitly to whatever needs a path.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

# dsMode defaults (upstream NewDsModeConfig); hostMode ones from NewHostModeConfig.
DS_MODE_CGROUP_ROOT_DIR = "/host-cgroup/"
HOST_MODE_CGROUP_ROOT_DIR = "/sys/fs/cgroup/"


@dataclass(slots=True)
class Config:
    cgroup_root_dir: str = DS_MODE_CGROUP_ROOT_DIR
    sys_root_dir: str = "/host-sys/"
    sys_fs_root_dir: str = "/host-sys-fs/"
    proc_root_dir: str = "/proc/"
    var_run_root_dir: str = "/host-var-run/"
    var_lib_kubelet_root_dir: str = "/var/lib/kubelet/"
    run_root_dir: str = "/host-run/"

    @classmethod
    def host_mode(cls) -> Config:
        return cls(
            cgroup_root_dir=HOST_MODE_CGROUP_ROOT_DIR,
            sys_root_dir="/sys/",
            sys_fs_root_dir="/sys/fs/",
            var_run_root_dir="/var/run/",
            run_root_dir="/run/",
        )

    def add_flags(self, parser: argparse.ArgumentParser) -> None:
        """Registers upstream's flag names with this config's values as defaults."""
        for flag, attr, help_text in (
            ("--cgroup-root-dir", "cgroup_root_dir", "Cgroup root dir"),
            ("--sys-root-dir", "sys_root_dir", "host /sys dir in container"),
            ("--sys-fs-root-dir", "sys_fs_root_dir", "host /sys/fs dir in container"),
            ("--proc-root-dir", "proc_root_dir", "host /proc dir in container"),
            ("--var-run-root-dir", "var_run_root_dir", "host /var/run dir in container"),
            ("--var-lib-kubelet-dir", "var_lib_kubelet_root_dir", "host kubelet dir"),
            ("--run-root-dir", "run_root_dir", "host /run dir in container"),
        ):
            parser.add_argument(flag, dest=attr, default=getattr(self, attr), help=help_text)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Config:
        return cls(**{name: getattr(args, name) for name in cls.__slots__})
