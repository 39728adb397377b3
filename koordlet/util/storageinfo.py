"""The node's block devices, volume groups and mounts: upstream `pkg/koordlet/util/storageinfo.go`
(`LocalStorageInfo`, filled there from `lsblk`, `vgs`, `lvs` and `findmnt`).

BlkIOReconcile resolves a NodeSLO block (`/dev/vdb`, `/dev/vdb1`, an LVM volume group, a pod's
volume) to the `major:minor` of the disk it lives on: blkio throttles and weights apply to
whole disks. Here the same maps are read from the kernel's files, so no tool need be installed
in koordlet's image:

* disks and partitions from `<sys>/block/<disk>/dev` and `<sys>/block/<disk>/<part>/dev` (a
  partition dir has a `partition` file); loop and device-mapper devices are not disks, as
  `lsblk` types them `loop` and `lvm`;
* LVM volume groups from the device-mapper devices whose `dm/uuid` starts with `LVM-`: the
  mapper name `dm/name` is `<vg>-<lv>` with each `-` inside a name doubled, and `slaves/` names
  the physical volume under it. As upstream (`pv_count == 1`), a volume group is mapped only
  when it sits on one physical volume; a volume group with no logical volume is not visible in
  sysfs, and a machine without LVM (this one) has none;
* mount points from `<proc>/mounts` (target → source device).

`StorageInfoSource` is the seam: the strategy takes any source, tests pass fixed maps.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Protocol

logger = logging.getLogger(__name__)

_MOUNT_ESCAPE = re.compile(r"\\([0-7]{3})")
# The single `-` between the volume group and the logical volume of a mapper name.
_MAPPER_SEPARATOR = re.compile(r"(?<!-)-(?!-)")


@dataclass(slots=True)
class LocalStorageInfo:
    """Upstream `LocalStorageInfo`; device names are `/dev/<name>`."""

    disk_number: dict[str, str] = field(default_factory=dict)  # "/dev/vda" → "253:0"
    number_disk: dict[str, str] = field(default_factory=dict)  # "253:0" → "/dev/vda"
    partition_disk: dict[str, str] = field(default_factory=dict)  # "/dev/vdb3" → "/dev/vdb"
    vg_disk: dict[str, str] = field(default_factory=dict)  # "yoda-pool0" → "/dev/vdb"
    # "/dev/mapper/yoda--pool0-yoda--test1" → "yoda-pool0"
    lv_mapper_vg: dict[str, str] = field(default_factory=dict)
    mount_point_device: dict[str, str] = field(default_factory=dict)  # mount target → source

    def disk_of_device(self, device: str) -> str | None:
        """A disk itself, or the disk of a partition (upstream `getDiskByDevice`)."""
        if device in self.disk_number:
            return device
        return self.partition_disk.get(device)

    def disk_of_volume_group(self, vg_name: str) -> str | None:
        return self.vg_disk.get(vg_name)

    def disk_of_mount_point(self, mount_point: str) -> str | None:
        """The disk under a mount: mounted directly, through a partition or through an LVM
        logical volume (upstream `getDiskByMountPoint`)."""
        device = self.mount_point_device.get(mount_point)
        if device is None:
            return None
        if device in self.disk_number:
            return device
        if device in self.partition_disk:
            return self.partition_disk[device]
        vg_name = self.lv_mapper_vg.get(device)
        return None if vg_name is None else self.vg_disk.get(vg_name)

    def number(self, disk: str | None) -> str | None:
        return None if disk is None else self.disk_number.get(disk)


class StorageInfoSource(Protocol):
    def load(self) -> LocalStorageInfo:
        """The node's storage now; raises OSError when it cannot be read."""


def split_mapper_name(name: str) -> tuple[str, str] | None:
    """`yoda--pool0-yoda--test1` → (`yoda-pool0`, `yoda-test1`); None if not `<vg>-<lv>`."""
    parts = _MAPPER_SEPARATOR.split(name)
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0].replace("--", "-"), parts[1].replace("--", "-")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


@dataclass(slots=True, frozen=True)
class SysfsStorageInfo:
    """`LocalStorageInfo` from `<sys_root>/block` and `<proc_root>/mounts`."""

    sys_root: str
    proc_root: str

    def load(self) -> LocalStorageInfo:
        info = LocalStorageInfo()
        block = os.path.join(self.sys_root, "block")
        names = sorted(os.listdir(block))
        mappers: list[str] = []
        for name in names:
            path = os.path.join(block, name)
            if name.startswith("loop"):
                continue
            if os.path.isdir(os.path.join(path, "dm")):
                mappers.append(name)
                continue
            disk = "/dev/" + name
            number = _read(os.path.join(path, "dev"))
            info.disk_number[disk] = number
            info.number_disk[number] = disk
            for child in os.listdir(path):
                if os.path.exists(os.path.join(path, child, "partition")):
                    info.partition_disk["/dev/" + child] = disk
        self._scan_volume_groups(info, block, mappers)
        info.mount_point_device.update(read_mounts(os.path.join(self.proc_root, "mounts")))
        return info

    @staticmethod
    def _scan_volume_groups(info: LocalStorageInfo, block: str, mappers: list[str]) -> None:
        physical: dict[str, set[str]] = {}
        for name in mappers:
            dm = os.path.join(block, name, "dm")
            try:
                if not _read(os.path.join(dm, "uuid")).startswith("LVM-"):
                    continue
                mapper_name = _read(os.path.join(dm, "name"))
                slaves = os.listdir(os.path.join(block, name, "slaves"))
            except OSError as e:
                logger.debug("storageinfo: skipping device-mapper %s: %s", name, e)
                continue
            split = split_mapper_name(mapper_name)
            if split is None:
                continue
            vg_name, _ = split
            info.lv_mapper_vg["/dev/mapper/" + mapper_name] = vg_name
            physical.setdefault(vg_name, set()).update("/dev/" + s for s in slaves)
        for vg_name, volumes in sorted(physical.items()):
            if len(volumes) != 1:
                logger.warning("storageinfo: volume group %s spans %d physical volumes; only "
                               "one is supported", vg_name, len(volumes))
                continue
            disk = info.disk_of_device(volumes.pop())
            if disk is not None:
                info.vg_disk[vg_name] = disk


def read_mounts(path: str) -> dict[str, str]:
    """Mount target → source from a `/proc/mounts` table (octal escapes such as `\\040`
    decoded); the last mount on a target wins, as it is the one visible there."""
    mounts: dict[str, str] = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 2:
                continue
            source, target = (_MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), v)
                              for v in fields[:2])
            mounts[target] = source
    return mounts
