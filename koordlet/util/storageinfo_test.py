"""The node's storage maps (upstream `storageinfo_test.go` and the lookups of
`blkio_reconcile_test.go`: `TestGetDiskByDevice`, `TestGetDiskByVG`, `TestGetDiskByMountPoint`).

`SysfsStorageInfo` reads a sysfs and proc tree laid out in a temp dir as the kernel does:
`block/<disk>/dev`, `block/<disk>/<part>/{dev,partition}`, and device-mapper LVM volumes
`block/dm-N/{dev,dm/name,dm/uuid,slaves/<pv>}`, plus a `/proc/mounts` table. No LVM is needed
on the machine running the test (this one has none).
"""

from __future__ import annotations

from pathlib import Path

from koordlet.util.storageinfo import (
    LocalStorageInfo,
    SysfsStorageInfo,
    read_mounts,
    split_mapper_name,
)

KUBELET = "/var/lib/kubelet"


def upstream_info() -> LocalStorageInfo:
    """upstream newLocalStorageInfo"""
    return LocalStorageInfo(
        disk_number={"/dev/vda": "253:0", "/dev/vdb": "253:16"},
        number_disk={"253:0": "/dev/vda", "253:16": "/dev/vdb"},
        partition_disk={"/dev/vda1": "/dev/vda", "/dev/vdb1": "/dev/vdb"},
        vg_disk={"yoda-pool0": "/dev/vdb"},
        lv_mapper_vg={"/dev/mapper/yoda--pool0-yoda--test1": "yoda-pool0"},
        mount_point_device={
            f"{KUBELET}/mount-disk": "/dev/vda",
            f"{KUBELET}/mount-partition": "/dev/vda1",
            f"{KUBELET}/mount-lv": "/dev/mapper/yoda--pool0-yoda--test1",
        },
    )


def test_disk_of_device() -> None:
    info = upstream_info()
    assert info.disk_of_device("/dev/vda") == "/dev/vda"
    assert info.disk_of_device("/dev/vda1") == "/dev/vda"
    assert info.disk_of_device("/dev/unknown") is None


def test_disk_of_volume_group() -> None:
    info = upstream_info()
    assert info.disk_of_volume_group("yoda-pool0") == "/dev/vdb"
    assert info.disk_of_volume_group("unknown-pool") is None


def test_disk_of_mount_point() -> None:
    info = upstream_info()
    assert info.disk_of_mount_point(f"{KUBELET}/mount-disk") == "/dev/vda"
    assert info.disk_of_mount_point(f"{KUBELET}/mount-partition") == "/dev/vda"
    assert info.disk_of_mount_point(f"{KUBELET}/mount-lv") == "/dev/vdb"
    assert info.disk_of_mount_point(f"{KUBELET}/unknown") is None


def test_number() -> None:
    info = upstream_info()
    assert info.number("/dev/vda") == "253:0"
    assert info.number("/dev/unknown") is None
    assert info.number(None) is None


def test_mapper_names() -> None:
    assert split_mapper_name("yoda--pool0-yoda--test1") == ("yoda-pool0", "yoda-test1")
    assert split_mapper_name("vg0-lv0") == ("vg0", "lv0")
    assert split_mapper_name("no--separator") is None
    assert split_mapper_name("crypt") is None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def kernel_tree(root: Path) -> tuple[str, str]:
    """vda (253:0) with partition vda1, vdb (253:16) with vdb1 and vdb3 (the PV of volume group
    yoda-pool0 and its two logical volumes), a loop device and a dm-crypt device."""
    block = root / "sys" / "block"
    _write(block / "vda" / "dev", "253:0")
    _write(block / "vda" / "vda1" / "dev", "253:1")
    _write(block / "vda" / "vda1" / "partition", "1")
    (block / "vda" / "queue").mkdir()  # not a partition
    _write(block / "vdb" / "dev", "253:16")
    for part, minor in (("vdb1", 17), ("vdb3", 19)):
        _write(block / "vdb" / part / "dev", f"253:{minor}")
        _write(block / "vdb" / part / "partition", part[-1])
    _write(block / "loop0" / "dev", "7:0")
    for dm, name, uuid in (("dm-0", "yoda--pool0-yoda--test1", "LVM-abc"),
                           ("dm-1", "yoda--pool0-yoda--test2", "LVM-abd"),
                           ("dm-2", "luks-1234", "CRYPT-LUKS2-1234")):
        _write(block / dm / "dev", f"252:{dm[-1]}")
        _write(block / dm / "dm" / "name", name)
        _write(block / dm / "dm" / "uuid", uuid)
        (block / dm / "slaves").mkdir()
        (block / dm / "slaves" / "vdb3").touch()
    _write(root / "proc" / "mounts", "\n".join([
        "/dev/vda1 / ext4 rw,relatime 0 0",
        "proc /proc proc rw 0 0",
        f"/dev/mapper/yoda--pool0-yoda--test1 {KUBELET}/pods/u1/volumes/kubernetes.io~csi/"
        "pv1/mount ext4 rw 0 0",
        "/dev/vdb1 /mnt/with\\040space ext4 rw 0 0",
    ]))
    return str(root / "sys"), str(root / "proc")


def test_sysfs_storage_info(tmp_path: Path) -> None:
    info = SysfsStorageInfo(*kernel_tree(tmp_path)).load()
    assert info.disk_number == {"/dev/vda": "253:0", "/dev/vdb": "253:16"}
    assert info.number_disk == {"253:0": "/dev/vda", "253:16": "/dev/vdb"}
    assert info.partition_disk == {"/dev/vda1": "/dev/vda", "/dev/vdb1": "/dev/vdb",
                                   "/dev/vdb3": "/dev/vdb"}
    assert info.vg_disk == {"yoda-pool0": "/dev/vdb"}
    assert info.lv_mapper_vg == {"/dev/mapper/yoda--pool0-yoda--test1": "yoda-pool0",
                                 "/dev/mapper/yoda--pool0-yoda--test2": "yoda-pool0"}
    mount = f"{KUBELET}/pods/u1/volumes/kubernetes.io~csi/pv1/mount"
    assert info.disk_of_mount_point(mount) == "/dev/vdb"
    assert info.disk_of_mount_point("/") == "/dev/vda"
    assert info.mount_point_device["/mnt/with space"] == "/dev/vdb1"


def test_a_volume_group_on_two_physical_volumes_is_not_mapped(tmp_path: Path) -> None:
    # upstream maps only volume groups with pv_count == 1
    sys_root, proc_root = kernel_tree(tmp_path)
    (Path(sys_root) / "block" / "dm-1" / "slaves" / "vda1").touch()
    info = SysfsStorageInfo(sys_root, proc_root).load()
    assert info.vg_disk == {}
    assert "/dev/mapper/yoda--pool0-yoda--test1" in info.lv_mapper_vg


def test_this_machine() -> None:
    """This machine's /sys/block and /proc/mounts load; its loop devices are not disks."""
    info = SysfsStorageInfo("/sys", "/proc").load()
    assert all(":" in n for n in info.disk_number.values())
    assert not any(d.startswith("/dev/loop") for d in info.disk_number)


def test_read_mounts(tmp_path: Path) -> None:
    table = tmp_path / "mounts"
    table.write_text("/dev/vda1 /a ext4 rw 0 0\n/dev/vdb1 /a ext4 rw 0 0\n\n")
    assert read_mounts(str(table)) == {"/a": "/dev/vdb1"}
