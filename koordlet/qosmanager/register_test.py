"""The strategy registry: each strategy under the name upstream registers it by."""

from __future__ import annotations

from koordlet.qosmanager.blkio import BlkIOReconcile
from koordlet.qosmanager.cgreconcile import CgroupReconcile
from koordlet.qosmanager.cpuburst import CPUBurst
from koordlet.qosmanager.cpuevict import CPUEvict
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.memoryevict import MemoryEvict
from koordlet.qosmanager.register import STRATEGY_PLUGINS
from koordlet.qosmanager.resctrl import ResctrlReconcile
from koordlet.qosmanager.sysreconcile import SystemConfigReconcile


def test_upstream_names_resolve_to_their_strategies() -> None:
    assert STRATEGY_PLUGINS == {
        "CPUSuppresss": CPUSuppress,  # sic, as upstream
        "CPUEvict": CPUEvict,
        "memoryEvict": MemoryEvict,
        "CPUBurst": CPUBurst,
        "ResctrlReconcile": ResctrlReconcile,
        "CgroupReconcile": CgroupReconcile,
        "BlkioReconcile": BlkIOReconcile,
        "SystemConfigReconcile": SystemConfigReconcile,
    }
