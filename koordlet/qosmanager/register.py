"""The one registration list of qosmanager strategies: upstream `qosmanager/plugins/register.go`.

Keys are upstream's strategy names; each factory builds its strategy from the shared context.
"""

from __future__ import annotations

from koordlet.qosmanager.cpuburst import CPUBurst
from koordlet.qosmanager.cpuevict import CPUEvict
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.framework import StrategyFactory
from koordlet.qosmanager.memoryevict import MemoryEvict

STRATEGY_PLUGINS: dict[str, StrategyFactory] = {
    CPUSuppress.name: CPUSuppress,
    CPUEvict.name: CPUEvict,
    MemoryEvict.name: MemoryEvict,
    CPUBurst.name: CPUBurst,
}
