"""BlkioReconcile: upstream `pkg/koordlet/qosmanager/plugins/blkio/blkio_reconcile.go` (gate
`BlkIOReconcile`, default off).

Owns the blkio settings koordlet gives block devices, every reconcile interval, from NodeSLO
`resourceQOSStrategy.<class>.blkioQOS.blocks[]` and the pods' `koordinator.sh/blkioQOS`
annotations:

* `beClass` blocks go to the BestEffort kube-QoS dir: per disk,
  `blkio.throttle.{read,write}_{iops,bps}_device` (`<major:minor> <n>`, 0 = unlimited) and
  `blkio.cost.weight` (`<major:minor> <percent>`, 100 when unset);
* `cgroupRoot` blocks configure blk-iocost at the blkio root: `blkio.cost.qos`
  (`<dev> enable=1 ctrl=user rpct=.. rlat=.. wpct=.. wlat=..`, latencies 3000 µs at the 95th
  percentile when unset) and `blkio.cost.model` (`ctrl=auto`, or the user model);
* each Running pod with a QoS label and the annotation gets its annotation's blocks on its pod
  dir, the same files as the BE dir (an empty annotation clears them);
* `lsrClass`/`lsClass` blocks are not applied (said once, as upstream warns).

A block names a disk (`device`: `/dev/vdb` or a partition of it), an LVM volume group
(`volumegroup`) or a pod volume (`podvolume`: a PVC's or CSI ephemeral volume's mount under
`<kubelet>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount`), resolved to the `major:minor`
of its disk through the node's storage info (`koordlet.util.storageinfo`). A disk that has an
entry in a target's files but is no longer configured there is reset: throttles to 0 (the
kernel drops the line), weight to 100, blk-iocost to `enable=0`. A block that cannot be
resolved skips that target's round, as upstream (said once while it lasts).

The files are cgroup v1 only (upstream registers no blkio resource for v2): on v2 the strategy
says so once and does nothing. The throttle files are in the mainline kernel; `blkio.cost.*`
are Anolis additions, so elsewhere they are left out and said once each (upstream instead
skips a target whose files it cannot all read). A PVC volume needs the claim's bound volume
name, which koordlet here does not watch: pass a `PVCVolumes` to resolve them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from api.errors import MalformedValueError
from api.extension.pod_qos import ANNOTATION_POD_BLKIO_QOS, parse_pod_blkio_qos
from api.extension.qos import QoSClass, get_kube_qos_class, get_pod_qos_class_raw
from api.slo.v1alpha1.resource_qos import BlkIOQOSCfg, BlockType, ResourceQOS
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import AnnotationWarnings, pod_name, pod_uid
from koordlet.resourceexecutor.updater import CgroupUpdater, new_cgroup_updater
from koordlet.util.storageinfo import LocalStorageInfo, StorageInfoSource, SysfsStorageInfo
from koordlet.util.system.cgroup import ResourceUnsupportedError
from pkg.features.koordlet_features import BLKIO_RECONCILE

logger = logging.getLogger(__name__)

READ_IOPS = "blkio.throttle.read_iops_device"
READ_BPS = "blkio.throttle.read_bps_device"
WRITE_IOPS = "blkio.throttle.write_iops_device"
WRITE_BPS = "blkio.throttle.write_bps_device"
IO_WEIGHT = "blkio.cost.weight"
IO_QOS = "blkio.cost.qos"
IO_MODEL = "blkio.cost.model"

# Upstream's defaults for fields a block leaves unset.
DEFAULT_IO_WEIGHT_PERCENT = 100
DEFAULT_IO_LATENCY = 3000
DEFAULT_LATENCY_PERCENT = 95

CSI_VOLUMES_DIR = "volumes/kubernetes.io~csi"


class IOValues(Protocol):
    """`ioCfg` of a NodeSLO block or of a pod annotation's block (two models, same fields)."""

    @property
    def read_iops(self) -> int | None: ...
    @property
    def write_iops(self) -> int | None: ...
    @property
    def read_bps(self) -> int | None: ...
    @property
    def write_bps(self) -> int | None: ...
    @property
    def io_weight_percent(self) -> int | None: ...
    @property
    def read_latency(self) -> int | None: ...
    @property
    def write_latency(self) -> int | None: ...
    @property
    def read_latency_percent(self) -> int | None: ...
    @property
    def write_latency_percent(self) -> int | None: ...
    @property
    def enable_user_model(self) -> bool | None: ...
    @property
    def model_read_bps(self) -> int | None: ...
    @property
    def model_write_bps(self) -> int | None: ...
    @property
    def model_read_seq_iops(self) -> int | None: ...
    @property
    def model_write_seq_iops(self) -> int | None: ...
    @property
    def model_read_rand_iops(self) -> int | None: ...
    @property
    def model_write_rand_iops(self) -> int | None: ...


class PVCVolumes(Protocol):
    def get_volume_name(self, namespace: str, claim_name: str) -> str | None:
        """The PersistentVolume bound to a claim (upstream `StatesInformer.GetVolumeName`)."""


@dataclass(slots=True, frozen=True)
class Block:
    name: str
    type: str
    io: IOValues


@dataclass(slots=True, frozen=True)
class BlkIOWrite:
    resource_type: str
    value: str


class BlockResolutionError(ValueError):
    """A block that names no disk of this node."""


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def throttle_writes(io: IOValues, disk: str) -> list[BlkIOWrite]:
    """Upstream `getBlkIOUpdaterFromBlockCfg`: a BE or pod dir's five files for one disk."""
    return [
        BlkIOWrite(READ_IOPS, f"{disk} {_or(io.read_iops, 0)}"),
        BlkIOWrite(READ_BPS, f"{disk} {_or(io.read_bps, 0)}"),
        BlkIOWrite(WRITE_IOPS, f"{disk} {_or(io.write_iops, 0)}"),
        BlkIOWrite(WRITE_BPS, f"{disk} {_or(io.write_bps, 0)}"),
        BlkIOWrite(IO_WEIGHT, f"{disk} {_or(io.io_weight_percent, DEFAULT_IO_WEIGHT_PERCENT)}"),
    ]


def throttle_removals(disk: str) -> list[BlkIOWrite]:
    """Upstream `getBlkIORemoverFromDiskNumber`: a disk no longer configured gets the defaults."""
    return [
        BlkIOWrite(READ_IOPS, f"{disk} 0"),
        BlkIOWrite(READ_BPS, f"{disk} 0"),
        BlkIOWrite(WRITE_IOPS, f"{disk} 0"),
        BlkIOWrite(WRITE_BPS, f"{disk} 0"),
        BlkIOWrite(IO_WEIGHT, f"{disk} {DEFAULT_IO_WEIGHT_PERCENT}"),
    ]


def root_writes(io: IOValues, disk: str) -> list[BlkIOWrite]:
    """Upstream `getDiskConfigUpdaterFromBlockCfg`: the disk's blk-iocost QoS and cost model."""
    qos = (f"{disk} enable=1 ctrl=user"
           f" rpct={_or(io.read_latency_percent, DEFAULT_LATENCY_PERCENT)}"
           f" rlat={_or(io.read_latency, DEFAULT_IO_LATENCY)}"
           f" wpct={_or(io.write_latency_percent, DEFAULT_LATENCY_PERCENT)}"
           f" wlat={_or(io.write_latency, DEFAULT_IO_LATENCY)}")
    if io.enable_user_model:
        model = (f"{disk} ctrl=user rbps={_or(io.model_read_bps, 0)}"
                 f" rseqiops={_or(io.model_read_seq_iops, 0)}"
                 f" rrandiops={_or(io.model_read_rand_iops, 0)}"
                 f" wbps={_or(io.model_write_bps, 0)}"
                 f" wseqiops={_or(io.model_write_seq_iops, 0)}"
                 f" wrandiops={_or(io.model_write_rand_iops, 0)}")
    else:
        model = f"{disk} ctrl=auto"
    return [BlkIOWrite(IO_QOS, qos), BlkIOWrite(IO_MODEL, model)]


def root_removals(disk: str) -> list[BlkIOWrite]:
    """Upstream `getDiskConfigRemoverFromDiskNumber`."""
    return [BlkIOWrite(IO_QOS, f"{disk} enable=0")]


@dataclass(slots=True, frozen=True)
class Target:
    """A dir and the files koordlet owns there (upstream `blkioUpdater`)."""

    parent_dir: str
    recorded_files: tuple[str, ...]  # the files whose devices are koordlet's (the recorder)
    writes: Callable[[IOValues, str], list[BlkIOWrite]]
    removals: Callable[[str], list[BlkIOWrite]]


def throttle_target(parent_dir: str) -> Target:
    return Target(parent_dir, (READ_IOPS, READ_BPS, WRITE_IOPS, WRITE_BPS, IO_WEIGHT),
                  throttle_writes, throttle_removals)


def root_target() -> Target:
    return Target("", (IO_QOS,), root_writes, root_removals)


def device_numbers(content: str, path: str) -> list[str]:
    """The `major:minor` of each line of a per-device blkio file (upstream
    `getDiskNumbersFromCgroupFile`); ValueError for a line of one field."""
    numbers = []
    for line in content.splitlines():
        fields = line.split()
        if not fields:
            continue
        if len(fields) < 2:
            raise ValueError(f"content of {path} is not correct")
        device = fields[0]
        major, sep, minor = device.partition(":")
        if sep and major.isdigit() and minor.isdigit():
            numbers.append(device)
    return numbers


def slo_blocks(cfg: BlkIOQOSCfg) -> list[Block]:
    """The blocks of a class; none when it is disabled (so that all its entries are reset)."""
    if not cfg.enable:
        return []
    return [Block(b.name or "", b.block_type or "", b.io_cfg) for b in cfg.blocks or []]


class BlkIOReconcile:
    name = "BlkioReconcile"

    def __init__(self, ctx: Context, storage: StorageInfoSource | None = None,
                 pvc_volumes: PVCVolumes | None = None) -> None:
        self.ctx = ctx
        self.storage = storage or SysfsStorageInfo(ctx.system.sys_root_dir,
                                                   ctx.system.proc_root_dir)
        self.pvc_volumes = pvc_volumes
        self.warnings = AnnotationWarnings(ctx, "blkio")
        self._said: set[str] = set()

    def enabled(self) -> bool:
        return (self.ctx.feature_gate.enabled(BLKIO_RECONCILE)
                and self.ctx.config.reconcile_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.reconcile_interval_seconds)

    # Pods come and go (their errors are keys): past this many keys the memory starts afresh.
    MAX_SAID = 1024

    def _once(self, key: str, level: int, message: str, *args: object) -> None:
        """Logs `message` the first time `key` comes up, at debug level after that, so that a
        condition that lasts does not log every second."""
        if key in self._said:
            logger.debug(message, *args)
            return
        if len(self._said) >= self.MAX_SAID:
            self._said.clear()
        self._said.add(key)
        logger.log(level, message, *args)

    def run_once(self) -> None:
        if self.ctx.env.v2:
            self._once("v2", logging.INFO, "blkio: the blkio files are cgroup v1 only; this "
                       "node runs cgroup v2, so block IO QoS is not applied")
            return
        slo = self.ctx.states.get_node_slo()
        strategy = None if slo is None else slo.spec.resource_qos_strategy
        if strategy is None:
            logger.debug("blkio: no NodeSLO resourceQOSStrategy yet")
            return
        try:
            storage = self.storage.load()
        except OSError as e:
            self._once("storage", logging.ERROR, "blkio: cannot read the node's storage: %s", e)
            return
        self._said.discard("storage")
        for class_name, qos in (("LSRClass", strategy.lsr_class), ("LSClass", strategy.ls_class)):
            cfg = _blkio_of(qos)
            if cfg is not None and cfg.enable and cfg.blocks:
                self._once(class_name, logging.WARNING,
                           "blkio: configuring blkio of %s is not supported", class_name)
        updaters: list[CgroupUpdater] = []
        be_cfg = _blkio_of(strategy.be_class)
        if be_cfg is not None:
            updaters += self._reconcile(slo_blocks(be_cfg), None, storage,
                                        throttle_target(self.ctx.env.be_dir()), "be class")
        root_cfg = _blkio_of(strategy.cgroup_root)
        if root_cfg is not None:
            updaters += self._reconcile(slo_blocks(root_cfg), None, storage, root_target(),
                                        "root class")
        for pod in self.ctx.states.get_all_pods():
            updaters += self._reconcile_pod(pod, storage)
        self.ctx.executor.update_batch(True, updaters)

    def _reconcile_pod(self, pod: KubeDict, storage: LocalStorageInfo) -> list[CgroupUpdater]:
        if get_pod_qos_class_raw(pod) is QoSClass.NONE:
            return []
        if (pod.get("status") or {}).get("phase") != "Running":
            return []
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        raw = annotations.get(ANNOTATION_POD_BLKIO_QOS)
        if raw is None:
            return []
        blocks: list[Block] = []
        if raw:
            try:
                parsed = parse_pod_blkio_qos(annotations)
            except MalformedValueError as err:
                self.warnings.report(pod, "Pod", err)
                return []
            blocks = [Block(b.name, b.type, b.io_cfg) for b in (parsed and parsed.blocks) or []]
        pod_dir = self.ctx.env.pod_dir(get_kube_qos_class(pod), pod_uid(pod))
        return self._reconcile(blocks, pod, storage, throttle_target(pod_dir),
                               f"pod {pod_name(pod)}")

    def _reconcile(self, blocks: list[Block], pod: KubeDict | None, storage: LocalStorageInfo,
                   target: Target, what: str) -> list[CgroupUpdater]:
        """Upstream `updateBlkIOConfig`: the blocks' writes and the resets of the disks the
        target's files list but the blocks no longer name; none when a block does not resolve
        or a file does not parse."""
        try:
            stale = self._recorded(target)
            writes: list[BlkIOWrite] = []
            for block in blocks:
                disk = self.disk_number(block, pod, storage)
                stale.discard(disk)
                writes += target.writes(block.io, disk)
        except ValueError as e:
            self._once(f"{what}: {e}", logging.ERROR, "blkio: fail to update %s blkio config: %s",
                       what, e)
            return []
        for disk in sorted(stale):
            writes += target.removals(disk)
        return self._updaters(target.parent_dir, writes)

    def _recorded(self, target: Target) -> set[str]:
        """The disks listed in the target's files (those the kernel has)."""
        recorded: set[str] = set()
        for resource_type in target.recorded_files:
            path = self.ctx.env.path(resource_type, target.parent_dir)
            try:
                with open(path) as f:
                    content = f.read()
            except FileNotFoundError:
                continue
            recorded.update(device_numbers(content, path))
        return recorded

    def disk_number(self, block: Block, pod: KubeDict | None,
                    storage: LocalStorageInfo) -> str:
        """The `major:minor` of the disk a block is on (upstream `getDiskNumberFromBlockCfg`)."""
        match block.type:
            case BlockType.DEVICE:
                number = storage.number(storage.disk_of_device(block.name))
                if number is None:
                    raise BlockResolutionError(
                        f"fail to get device number of device {block.name}")
                return number
            case BlockType.VOLUME_GROUP:
                number = storage.number(storage.disk_of_volume_group(block.name))
                if number is None:
                    raise BlockResolutionError(f"fail to get device number of vg {block.name}")
                return number
            case BlockType.POD_VOLUME:
                if pod is None:
                    raise BlockResolutionError("pod meta is nil")
                return self._pod_volume_disk_number(block, pod, storage)
        raise BlockResolutionError(f"block type {block.type} is not supported")

    def _pod_volume_disk_number(self, block: Block, pod: KubeDict,
                                storage: LocalStorageInfo) -> str:
        md = pod.get("metadata") or {}
        for volume in (pod.get("spec") or {}).get("volumes") or []:
            if volume.get("name") != block.name:
                continue
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if claim is not None:
                volume_name = (None if self.pvc_volumes is None else
                               self.pvc_volumes.get_volume_name(md.get("namespace", ""), claim))
                if not volume_name:
                    raise BlockResolutionError(
                        f"can not get the volume bound to pvc {md.get('namespace')}/{claim}")
            elif "csi" in volume:
                volume_name = block.name
            else:
                continue
            mount_point = os.path.join(self.ctx.system.var_lib_kubelet_root_dir, "pods",
                                       pod_uid(pod), CSI_VOLUMES_DIR, volume_name, "mount")
            number = storage.number(storage.disk_of_mount_point(mount_point))
            if number is None:
                raise BlockResolutionError(f"can not get diskNumber by mountpoint {mount_point}")
            return number
        raise BlockResolutionError(
            f"can not get diskNumber by pod {md.get('namespace')}/{md.get('name')} "
            f"volume {block.name}")

    def _updaters(self, parent_dir: str, writes: list[BlkIOWrite]) -> list[CgroupUpdater]:
        """The writes whose files this kernel has; a missing file is said once per file."""
        env = self.ctx.env
        out = []
        for w in writes:
            try:
                updater = new_cgroup_updater(env, w.resource_type, parent_dir, w.value)
                env.check_supported(updater.resource, parent_dir)
            except ResourceUnsupportedError as e:
                self._once(w.resource_type, logging.INFO,
                           "blkio: skipping %s, this kernel lacks it (%s)", w.resource_type, e)
                continue
            out.append(updater)
        return out


def _blkio_of(qos: ResourceQOS | None) -> BlkIOQOSCfg | None:
    return None if qos is None else qos.blkio_qos
