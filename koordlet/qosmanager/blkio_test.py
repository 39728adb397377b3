"""BlkioReconcile (upstream `blkio_reconcile_test.go`): the values of each file for each block,
the resets of disks dropped from the NodeSLO, block resolution, and which dirs a round asks
the executor to write.

The reconcile cases run on a cgroup v1 blkio hierarchy of plain files laid out in a temp dir as
the kernel does (`<root>/blkio/kubepods.slice/...`, with the Anolis `blkio.cost.*` files), and
record what the strategy hands the executor: plain files cannot keep one line per device as the
kernel's do, so the kernel's side is in blkio_realcgroup_test.py. The storage is upstream's
fixture (`newLocalStorageInfo`), through the `StorageInfoSource` seam.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from api.slo.v1alpha1.resource_qos import IOCfg
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.blkio import (
    IO_MODEL,
    IO_QOS,
    IO_WEIGHT,
    READ_BPS,
    READ_IOPS,
    WRITE_BPS,
    WRITE_IOPS,
    BlkIOReconcile,
    BlkIOWrite,
    Block,
    BlockResolutionError,
    device_numbers,
    root_removals,
    root_writes,
    throttle_removals,
    throttle_writes,
)
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, pod_with_containers
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.updater import CgroupUpdater
from koordlet.util.storageinfo import LocalStorageInfo
from koordlet.util.system.cgroup import CgroupError
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.config import Config as SystemConfig
from koordlet.util.system.testing import fake_v2_tree
from pkg.features import koordlet_feature_gate
from pkg.features.koordlet_features import BLKIO_RECONCILE

DISK = "253:16"
KUBELET = "/var/lib/kubelet"
PV_NAME = "yoda-87d8625a-dcc9-47bf-a14a-994cf2971193"
BE_DIR = "kubepods.slice/kubepods-besteffort.slice"
ALL_FILES = (READ_IOPS, READ_BPS, WRITE_IOPS, WRITE_BPS, IO_WEIGHT)


def w(resource_type: str, value: str) -> BlkIOWrite:
    return BlkIOWrite(resource_type, value)


def test_throttle_writes_default_values() -> None:
    assert throttle_writes(IOCfg(), DISK) == [
        w(READ_IOPS, "253:16 0"), w(READ_BPS, "253:16 0"), w(WRITE_IOPS, "253:16 0"),
        w(WRITE_BPS, "253:16 0"), w(IO_WEIGHT, "253:16 100")]


def test_throttle_writes_custom_values() -> None:
    io = IOCfg.model_validate({"readIOPS": 1024, "writeIOPS": 512, "readBPS": 1048576,
                               "writeBPS": 524288, "ioWeightPercent": 40})
    assert throttle_writes(io, DISK) == [
        w(READ_IOPS, "253:16 1024"), w(READ_BPS, "253:16 1048576"),
        w(WRITE_IOPS, "253:16 512"), w(WRITE_BPS, "253:16 524288"), w(IO_WEIGHT, "253:16 40")]


def test_throttle_removals() -> None:
    assert throttle_removals(DISK) == throttle_writes(IOCfg(), DISK)


def test_root_writes_default_values() -> None:
    assert root_writes(IOCfg(), DISK) == [
        w(IO_QOS, "253:16 enable=1 ctrl=user rpct=95 rlat=3000 wpct=95 wlat=3000"),
        w(IO_MODEL, "253:16 ctrl=auto")]


def test_root_writes_custom_latency_and_percent() -> None:
    io = IOCfg.model_validate({"readLatency": 1000, "writeLatency": 2000,
                               "readLatencyPercent": 90, "writeLatencyPercent": 80})
    assert root_writes(io, DISK) == [
        w(IO_QOS, "253:16 enable=1 ctrl=user rpct=90 rlat=1000 wpct=80 wlat=2000"),
        w(IO_MODEL, "253:16 ctrl=auto")]


def test_root_writes_user_model() -> None:
    io = IOCfg.model_validate({"enableUserModel": True, "modelReadBPS": 1000,
                               "modelWriteBPS": 2000, "modelReadSeqIOPS": 3000,
                               "modelWriteSeqIOPS": 4000, "modelReadRandIOPS": 5000,
                               "modelWriteRandIOPS": 6000})
    assert root_writes(io, DISK) == [
        w(IO_QOS, "253:16 enable=1 ctrl=user rpct=95 rlat=3000 wpct=95 wlat=3000"),
        w(IO_MODEL, "253:16 ctrl=user rbps=1000 rseqiops=3000 rrandiops=5000 wbps=2000 "
                    "wseqiops=4000 wrandiops=6000")]


def test_root_removals() -> None:
    assert root_removals(DISK) == [w(IO_QOS, "253:16 enable=0")]


def test_device_numbers() -> None:
    assert device_numbers("253:0 100\n253:16 2048\ntotal 0\n", "f") == ["253:0", "253:16"]
    assert device_numbers("", "f") == []
    with pytest.raises(ValueError, match="content of f is not correct"):
        device_numbers("253:16\n", "f")


def storage_info() -> LocalStorageInfo:
    """upstream newLocalStorageInfo, plus the pods' volume mounts of the reconcile test"""
    return LocalStorageInfo(
        disk_number={"/dev/vda": "253:0", "/dev/vdb": "253:16"},
        number_disk={"253:0": "/dev/vda", "253:16": "/dev/vdb"},
        partition_disk={"/dev/vda1": "/dev/vda", "/dev/vdb1": "/dev/vdb"},
        vg_disk={"yoda-pool0": "/dev/vdb"},
        lv_mapper_vg={"/dev/mapper/yoda--pool0-yoda--test1": "yoda-pool0",
                      "/dev/mapper/yoda--pool0-yoda--pv": "yoda-pool0"},
        mount_point_device={
            f"{KUBELET}/pods/pvc-pod/volumes/kubernetes.io~csi/{PV_NAME}/mount":
                "/dev/mapper/yoda--pool0-yoda--pv",
            f"{KUBELET}/pods/csi-pod/volumes/kubernetes.io~csi/html/mount":
                "/dev/mapper/yoda--pool0-yoda--test1",
            f"{KUBELET}/pods/part-pod/volumes/kubernetes.io~csi/html/mount": "/dev/vda1",
        },
    )


class FixedStorage:
    def __init__(self, info: LocalStorageInfo) -> None:
        self.info = info

    def load(self) -> LocalStorageInfo:
        return self.info


class PVCs:
    def get_volume_name(self, namespace: str, claim_name: str) -> str | None:
        return PV_NAME if (namespace, claim_name) == ("default", "test-pvc") else None


class RecordingExecutor(ResourceUpdateExecutor):
    """Records each round's requested writes (relative dir under blkio/, file, value)."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root
        self.rounds: list[list[tuple[str, str, str]]] = []

    def update_batch(self, cacheable: bool,
                     updaters: Iterable[CgroupUpdater]) -> list[CgroupError]:
        updaters = list(updaters)
        self.rounds.append([
            (str(Path(u.path).parent.relative_to(self.root / "blkio")), u.resource.type, u.value)
            for u in updaters])
        return super().update_batch(cacheable, updaters)


def volume_pod(uid: str, volume: dict, annotation: dict | str | None,
               phase: str = "Running", qos: str | None = "BE") -> dict:
    annotations = {} if annotation is None else {
        "koordinator.sh/blkioQOS": annotation if isinstance(annotation, str)
        else json.dumps(annotation)}
    pod = pod_with_containers(uid, qos, "BestEffort", [({}, {})], annotations, phase)
    pod["spec"]["volumes"] = [{"name": "html", **volume}]
    return pod


POD_BLOCKS = {"blocks": [{"name": "html", "type": "podvolume",
                          "ioCfg": {"readIOPS": 1024, "writeIOPS": 512}}]}
PVC = {"persistentVolumeClaim": {"claimName": "test-pvc"}}
CSI = {"csi": {"driver": "yoda"}}


def blkio_tree(root: Path, pod_uids: list[str], cost: bool = True) -> CgroupEnv:
    """A v1 blkio hierarchy: the root, kubepods, the BE dir and each pod's dir (systemd)."""
    env = CgroupEnv(root=str(root), v2=False, driver=CgroupDriver.SYSTEMD)
    dirs = ["", env.kube_qos_dir("Guaranteed"), env.be_dir()]
    dirs += [env.pod_dir("BestEffort", uid) for uid in pod_uids]
    for d in dirs:
        path = root / "blkio" / d
        path.mkdir(parents=True, exist_ok=True)
        names = list(ALL_FILES if d else ()) + ([IO_QOS, IO_MODEL] if not d else [])
        for name in names:
            if cost or not name.startswith("blkio.cost"):
                (path / name).write_text("")
    return env


def strategy_for(env: CgroupEnv, slo: NodeSLO | None, pods: list[dict],
                 storage: LocalStorageInfo | None = None) -> tuple[BlkIOReconcile,
                                                                   RecordingExecutor]:
    gate = koordlet_feature_gate.copy()
    gate.set_enabled(BLKIO_RECONCILE, True)
    executor = RecordingExecutor(Path(env.root))
    ctx = Context(env=env, executor=executor, metric_cache=MetricCache(),
                  states=FakeStates(None, slo, pods), feature_gate=gate,
                  system=SystemConfig(var_lib_kubelet_root_dir=KUBELET))
    return BlkIOReconcile(ctx, FixedStorage(storage or storage_info()), PVCs()), executor


def blkio_slo(**classes: dict) -> NodeSLO:
    return NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {
        "resourceQOSStrategy": {name: {"blkioQOS": cfg} for name, cfg in classes.items()}}})


BE_BLOCKS = {"enable": True, "blocks": [{"name": "yoda-pool0", "type": "volumegroup", "ioCfg": {
    "ioWeightPercent": 40, "readIOPS": 1024, "writeIOPS": 1024, "readBPS": 1048576,
    "writeBPS": 1048576}}]}
ROOT_BLOCKS = {"enable": True, "blocks": [{"name": "/dev/vdb", "type": "device", "ioCfg": {
    "readLatency": 1000, "writeLatency": 1000, "readLatencyPercent": 90,
    "writeLatencyPercent": 90}}]}


def test_gate_is_off_by_default(tmp_path: Path) -> None:
    env = blkio_tree(tmp_path, [])
    strategy, _ = strategy_for(env, None, [])
    strategy.ctx.feature_gate = koordlet_feature_gate.copy()
    assert not strategy.enabled()


def test_reconcile_upstream_case(tmp_path: Path, caplog) -> None:
    """upstream TestBlkIOReconcile_reconcile: LSR/LS blocks are not applied; the BE volume
    group's disk gets the BE throttles and a stale 253:0 entry is reset; the root disk gets
    blk-iocost; a PVC pod and a CSI ephemeral-volume pod get their annotation's blocks; a
    pending pod is left alone."""
    pvc_pod = volume_pod("pvc-pod", PVC, POD_BLOCKS)
    csi_pod = volume_pod("csi-pod", CSI, POD_BLOCKS)
    pending = volume_pod("pending-pod", CSI, POD_BLOCKS, phase="Pending")
    env = blkio_tree(tmp_path, ["pvc-pod", "csi-pod", "pending-pod"])
    be = tmp_path / "blkio" / BE_DIR
    (be / READ_BPS).write_text("253:0 2048\n")
    (tmp_path / "blkio" / IO_QOS).write_text("253:16 enable=1 ctrl=user rlat=2000 wlat=2000\n")
    slo = blkio_slo(
        lsrClass={"enable": True, "blocks": [{"name": "/dev/vdc", "type": "device"}]},
        lsClass={"enable": True, "blocks": [{"name": "/dev/vdd", "type": "device"}]},
        beClass=BE_BLOCKS, cgroupRoot=ROOT_BLOCKS)
    strategy, executor = strategy_for(env, slo, [pvc_pod, csi_pod, pending])
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.blkio"):
        strategy.run_once()
    assert [r.getMessage() for r in caplog.records] == [
        "blkio: configuring blkio of LSRClass is not supported",
        "blkio: configuring blkio of LSClass is not supported"]
    pvc_dir = env.pod_dir("BestEffort", "pvc-pod")
    csi_dir = env.pod_dir("BestEffort", "csi-pod")
    pod_writes = [(READ_IOPS, "253:16 1024"), (READ_BPS, "253:16 0"), (WRITE_IOPS, "253:16 512"),
                  (WRITE_BPS, "253:16 0"), (IO_WEIGHT, "253:16 100")]
    assert executor.rounds == [[
        (BE_DIR, READ_IOPS, "253:16 1024"), (BE_DIR, READ_BPS, "253:16 1048576"),
        (BE_DIR, WRITE_IOPS, "253:16 1024"), (BE_DIR, WRITE_BPS, "253:16 1048576"),
        (BE_DIR, IO_WEIGHT, "253:16 40"),
        (BE_DIR, READ_IOPS, "253:0 0"), (BE_DIR, READ_BPS, "253:0 0"),
        (BE_DIR, WRITE_IOPS, "253:0 0"), (BE_DIR, WRITE_BPS, "253:0 0"),
        (BE_DIR, IO_WEIGHT, "253:0 100"),
        (".", IO_QOS, "253:16 enable=1 ctrl=user rpct=90 rlat=1000 wpct=90 wlat=1000"),
        (".", IO_MODEL, "253:16 ctrl=auto"),
        *[(pvc_dir, f, v) for f, v in pod_writes],
        *[(csi_dir, f, v) for f, v in pod_writes],
    ]]


def test_disabled_class_resets_its_disks(tmp_path: Path) -> None:
    env = blkio_tree(tmp_path, [])
    (tmp_path / "blkio" / BE_DIR / READ_IOPS).write_text("253:16 1024\n")
    (tmp_path / "blkio" / IO_QOS).write_text("253:16 enable=1 ctrl=user rpct=90 rlat=1000\n")
    slo = blkio_slo(beClass={**BE_BLOCKS, "enable": False},
                    cgroupRoot={**ROOT_BLOCKS, "enable": False})
    strategy, executor = strategy_for(env, slo, [])
    strategy.run_once()
    assert executor.rounds == [[
        (BE_DIR, READ_IOPS, "253:16 0"), (BE_DIR, READ_BPS, "253:16 0"),
        (BE_DIR, WRITE_IOPS, "253:16 0"), (BE_DIR, WRITE_BPS, "253:16 0"),
        (BE_DIR, IO_WEIGHT, "253:16 100"), (".", IO_QOS, "253:16 enable=0")]]


def test_empty_pod_annotation_resets_the_pod_and_no_annotation_leaves_it(tmp_path: Path) -> None:
    cleared = volume_pod("cleared", CSI, "")
    untouched = volume_pod("untouched", CSI, None)
    no_qos = volume_pod("no-qos", CSI, POD_BLOCKS, qos=None)
    env = blkio_tree(tmp_path, ["cleared", "untouched", "no-qos"])
    for uid in ("cleared", "untouched", "no-qos"):
        (tmp_path / "blkio" / env.pod_dir("BestEffort", uid) / WRITE_IOPS).write_text(
            "253:0 10\n")
    strategy, executor = strategy_for(env, blkio_slo(), [cleared, untouched, no_qos])
    strategy.run_once()
    cleared_dir = env.pod_dir("BestEffort", "cleared")
    assert executor.rounds == [[(cleared_dir, f, v) for f, v in (
        (READ_IOPS, "253:0 0"), (READ_BPS, "253:0 0"), (WRITE_IOPS, "253:0 0"),
        (WRITE_BPS, "253:0 0"), (IO_WEIGHT, "253:0 100"))]]


def test_an_unresolvable_block_skips_its_target_only(tmp_path: Path, caplog) -> None:
    lost = volume_pod("lost", {"persistentVolumeClaim": {"claimName": "other"}}, POD_BLOCKS)
    csi_pod = volume_pod("csi-pod", CSI, POD_BLOCKS)
    env = blkio_tree(tmp_path, ["lost", "csi-pod"])
    slo = blkio_slo(beClass={"enable": True, "blocks": [{"name": "/dev/vdz", "type": "device"}]})
    strategy, executor = strategy_for(env, slo, [lost, csi_pod])
    with caplog.at_level(logging.ERROR, logger="koordlet.qosmanager.blkio"):
        strategy.run_once()
        strategy.run_once()  # the same errors are not said again
    assert {d for d, _, _ in executor.rounds[0]} == {env.pod_dir("BestEffort", "csi-pod")}
    errors = [r.getMessage() for r in caplog.records]
    assert errors == [
        "blkio: fail to update be class blkio config: fail to get device number of device "
        "/dev/vdz",
        "blkio: fail to update pod pod-lost blkio config: can not get the volume bound to pvc "
        "default/other"]


def test_malformed_annotation_is_reported_once(tmp_path: Path, caplog) -> None:
    bad = volume_pod("bad", CSI, '{"blocks":')
    env = blkio_tree(tmp_path, ["bad"])
    strategy, executor = strategy_for(env, blkio_slo(), [bad])
    with caplog.at_level(logging.WARNING, logger="koordlet.qosmanager.helpers"):
        strategy.run_once()
        strategy.run_once()
    assert executor.rounds == [[], []]
    assert len([r for r in caplog.records if "koordinator.sh/blkioQOS" in r.getMessage()]) == 1


@pytest.mark.parametrize(("block", "expect"), [
    (Block("/dev/vdb", "device", IOCfg()), "253:16"),
    (Block("/dev/vdb1", "device", IOCfg()), "253:16"),
    (Block("yoda-pool0", "volumegroup", IOCfg()), "253:16"),
])
def test_disk_number(tmp_path: Path, block: Block, expect: str) -> None:
    strategy, _ = strategy_for(blkio_tree(tmp_path, []), None, [])
    assert strategy.disk_number(block, None, storage_info()) == expect


@pytest.mark.parametrize(("block", "pod", "message"), [
    (Block("/dev/unknown", "device", IOCfg()), None, "fail to get device number of device"),
    (Block("unknown-pool", "volumegroup", IOCfg()), None, "fail to get device number of vg"),
    (Block("html", "podvolume", IOCfg()), None, "pod meta is nil"),
    (Block("other", "podvolume", IOCfg()), volume_pod("csi-pod", CSI, None),
     "can not get diskNumber by pod default/pod-csi-pod volume other"),
    (Block("html", "podvolume", IOCfg()), volume_pod("gone", CSI, None),
     "can not get diskNumber by mountpoint /var/lib/kubelet/pods/gone/volumes/"),
    (Block("x", "raid", IOCfg()), None, "block type raid is not supported"),
])
def test_disk_number_errors(tmp_path: Path, block: Block, pod: dict | None,
                            message: str) -> None:
    strategy, _ = strategy_for(blkio_tree(tmp_path, []), None, [])
    with pytest.raises(BlockResolutionError, match=message):
        strategy.disk_number(block, pod, storage_info())


def test_pod_volume_on_a_partition(tmp_path: Path) -> None:
    strategy, _ = strategy_for(blkio_tree(tmp_path, []), None, [])
    pod = volume_pod("part-pod", CSI, None)
    assert strategy.disk_number(Block("html", "podvolume", IOCfg()), pod,
                                storage_info()) == "253:0"


def test_kernel_without_blk_iocost_skips_those_files_once(tmp_path: Path, caplog) -> None:
    """A mainline kernel has the throttle files but not the Anolis `blkio.cost.*`: the
    throttles are still written, the cost files left out and said once each."""
    env = blkio_tree(tmp_path, [], cost=False)
    strategy, executor = strategy_for(env, blkio_slo(beClass=BE_BLOCKS, cgroupRoot=ROOT_BLOCKS),
                                      [])
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.blkio"):
        strategy.run_once()
        strategy.run_once()
    assert executor.rounds[0] == [
        (BE_DIR, READ_IOPS, "253:16 1024"), (BE_DIR, READ_BPS, "253:16 1048576"),
        (BE_DIR, WRITE_IOPS, "253:16 1024"), (BE_DIR, WRITE_BPS, "253:16 1048576")]
    said = sorted(r.getMessage().split(",")[0] for r in caplog.records)
    assert said == [f"blkio: skipping {IO_MODEL}", f"blkio: skipping {IO_QOS}",
                    f"blkio: skipping {IO_WEIGHT}"]
    assert (tmp_path / "blkio" / BE_DIR / READ_IOPS).read_text() == "253:16 1024"


def test_cgroup_v2_does_nothing_and_says_so_once(tmp_path: Path, caplog) -> None:
    """The blkio files are v1 only (upstream has no v2 blkio resource): a v2 tree laid out as
    the kernel does is left as it is."""
    env = fake_v2_tree(tmp_path, [BE_DIR])
    before = {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()}
    strategy, executor = strategy_for(env, blkio_slo(beClass=BE_BLOCKS),
                                      [volume_pod("p", CSI, POD_BLOCKS)])
    with caplog.at_level(logging.INFO, logger="koordlet.qosmanager.blkio"):
        strategy.run_once()
        strategy.run_once()
    assert executor.rounds == []
    assert {p: p.read_text() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert [r.getMessage() for r in caplog.records] == [
        "blkio: the blkio files are cgroup v1 only; this node runs cgroup v2, so block IO QoS "
        "is not applied"]


def test_unreadable_storage_is_said_once(tmp_path: Path, caplog) -> None:
    class Broken:
        def load(self) -> LocalStorageInfo:
            raise FileNotFoundError("no /sys/block")

    env = blkio_tree(tmp_path, [])
    strategy, executor = strategy_for(env, blkio_slo(beClass=BE_BLOCKS), [])
    strategy.storage = Broken()
    with caplog.at_level(logging.ERROR, logger="koordlet.qosmanager.blkio"):
        strategy.run_once()
        strategy.run_once()
    assert executor.rounds == []
    assert [r.getMessage() for r in caplog.records] == [
        "blkio: cannot read the node's storage: no /sys/block"]
