"""SystemConfigReconcile: upstream `pkg/koordlet/qosmanager/plugins/sysreconcile/system_config.go`
(gate `SystemConfig`, default off), with its system files and their validators from
`pkg/koordlet/util/system` (`MinFreeKbytes`, `WatermarkScaleFactor`, `MemcgReapBackGround`).

Owns the node's memory reclaim knobs, every reconcile interval, from NodeSLO `systemStrategy`:

* `minFreeKbytesFactor` → `<proc>/sys/vm/min_free_kbytes` = capacity KiB × factor / 10000,
  written when within 10240…10485760;
* `watermarkScaleFactor` → `<proc>/sys/vm/watermark_scale_factor`, within 10…400;
* `memcgReapBackGround` → `<sys>/kernel/mm/memcg_reaper/reap_background`, 0 or 1.

The capacity is the node's `status.capacity.memory`; an unset field leaves its file alone.
`<proc>` and `<sys>` are `--proc-root-dir` and `--sys-root-dir`. A file is written only when its
value differs. A file the kernel lacks (`memcg_reaper` is an Anolis addition) is skipped and
said once. Upstream's scheduler knobs of `systemStrategy` (`schedGroupIdentityEnabled`,
`schedIdleSaverWmark`, `schedFeatures`) and `pageCacheLimitEnabled` are not applied here.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from enum import Enum

from api.slo.v1alpha1.strategies import SystemStrategy
from koordlet.qosmanager.framework import Context
from koordlet.util.system.cgroup import CgroupError, cgroup_file_read, cgroup_file_write
from koordlet.util.system.config import Config as SystemConfig
from pkg.features.koordlet_features import SYSTEM_CONFIG
from pkg.util.podresources import MEMORY, quantity_int

logger = logging.getLogger(__name__)

# min_free_kbytes = capacity KiB × minFreeKbytesFactor / MIN_FREE_KBYTES_FACTOR_BASE
MIN_FREE_KBYTES_FACTOR_BASE = 10000


class Root(Enum):
    PROC = "proc"
    SYS = "sys"


@dataclass(frozen=True, slots=True)
class SystemFile:
    """A kernel knob outside the cgroup tree (upstream `SystemResource`) and its valid range."""

    root: Root
    relative_path: str
    min: int
    max: int

    def path(self, system: SystemConfig) -> str:
        root = system.proc_root_dir if self.root is Root.PROC else system.sys_root_dir
        return os.path.join(root, self.relative_path)

    def valid(self, value: int) -> bool:
        return self.min <= value <= self.max


MIN_FREE_KBYTES = SystemFile(Root.PROC, "sys/vm/min_free_kbytes", 10 * 1024, 10 * 1024 * 1024)
WATERMARK_SCALE_FACTOR = SystemFile(Root.PROC, "sys/vm/watermark_scale_factor", 10, 400)
MEMCG_REAP_BACKGROUND = SystemFile(Root.SYS, "kernel/mm/memcg_reaper/reap_background", 0, 1)


def calculate_memory_config(strategy: SystemStrategy,
                            node_memory: int) -> list[tuple[SystemFile, int]]:
    """Upstream `caculateMemoryConfig`: the knobs the strategy sets with a valid value."""
    wanted: list[tuple[SystemFile, int | None]] = [
        (WATERMARK_SCALE_FACTOR, strategy.watermark_scale_factor),
        (MEMCG_REAP_BACKGROUND, strategy.memcg_reap_back_ground),
    ]
    if strategy.min_free_kbytes_factor is not None:
        total_kbytes = node_memory // 1024
        if total_kbytes > 0:
            wanted.insert(0, (MIN_FREE_KBYTES,
                              total_kbytes * strategy.min_free_kbytes_factor
                              // MIN_FREE_KBYTES_FACTOR_BASE))
    out = []
    for file, value in wanted:
        if value is None:
            continue
        if not file.valid(value):
            logger.debug("sysreconcile: %s = %d is outside [%d, %d], not written",
                         file.relative_path, value, file.min, file.max)
            continue
        out.append((file, value))
    return out


class SystemConfigReconcile:
    name = "SystemConfigReconcile"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._missing_said: set[str] = set()

    def enabled(self) -> bool:
        return (self.ctx.feature_gate.enabled(SYSTEM_CONFIG)
                and self.ctx.config.reconcile_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.reconcile_interval_seconds)

    def run_once(self) -> None:
        slo = self.ctx.states.get_node_slo()
        strategy = None if slo is None else slo.spec.system_strategy
        if strategy is None:
            logger.debug("sysreconcile: no NodeSLO systemStrategy yet")
            return
        node = self.ctx.states.get_node()
        if node is None:
            logger.warning("sysreconcile: systemStrategy config failed, got nil node")
            return
        capacity = ((node.get("status") or {}).get("capacity") or {}).get(MEMORY, 0)
        try:
            memory = quantity_int(MEMORY, capacity)
        except ValueError as e:
            logger.warning("sysreconcile: node memory capacity is malformed: %s", e)
            return
        if memory <= 0:
            logger.warning("sysreconcile: systemStrategy config failed, node memoryCapacity "
                           "not valid, value: %d", memory)
            return
        for file, value in calculate_memory_config(strategy, memory):
            self._write_if_different(file, str(value))

    def _write_if_different(self, file: SystemFile, value: str) -> None:
        path = file.path(self.ctx.system)
        if not os.path.exists(path):
            if path not in self._missing_said:
                self._missing_said.add(path)
                logger.info("sysreconcile: skipping %s, this kernel lacks it", path)
            return
        try:
            if cgroup_file_read(path) == value:
                return
            cgroup_file_write(path, value)
        except CgroupError as e:
            logger.warning("sysreconcile: %s", e)
            return
        logger.info("sysreconcile: set %s to %s", path, value)
