"""The qosmanager strategies by upstream name (upstream
`pkg/koordlet/qosmanager/plugins/register.go`, `StrategyPlugins`).

This is the one place strategies are registered. Each strategy class declares its own name,
feature gate and interval; the manager runs every registered one whose `enabled()` is true.
"""

from __future__ import annotations

from koordlet.qosmanager.blkio import BlkIOReconcile
from koordlet.qosmanager.cgreconcile import CgroupReconcile
from koordlet.qosmanager.cpuburst import CPUBurst
from koordlet.qosmanager.cpuevict import CPUEvict
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.framework import StrategyFactory
from koordlet.qosmanager.memoryevict import MemoryEvict
from koordlet.qosmanager.resctrl import ResctrlReconcile
from koordlet.qosmanager.sysreconcile import SystemConfigReconcile

STRATEGY_PLUGINS: dict[str, StrategyFactory] = {
    strategy.name: strategy for strategy in (
        CPUSuppress, CPUEvict, MemoryEvict, CPUBurst, ResctrlReconcile, CgroupReconcile,
        BlkIOReconcile, SystemConfigReconcile)
}
