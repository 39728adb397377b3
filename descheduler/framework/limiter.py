"""The eviction limiter: how many pods one descheduling pass may evict.

Corresponds to the limiter of koordinator ``pkg/descheduler/framework/runtime`` (upstream's
``evictionLimiter``, fed by ``maxNoOfPodsToEvictPerNode``, ``...PerNamespace`` and ``...Total``
of the DeschedulerConfiguration). Counts are per pass: the descheduler resets them before each.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field

from descheduler.framework.types import Obj

log = logging.getLogger(__name__)


@dataclass(slots=True)
class EvictionLimiter:
    """None limits are unlimited."""

    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    per_node: Counter[str] = field(default_factory=Counter)
    per_namespace: Counter[str] = field(default_factory=Counter)
    total: int = 0

    def reset(self) -> None:
        self.per_node.clear()
        self.per_namespace.clear()
        self.total = 0

    def allows(self, pod: Obj) -> bool:
        """Whether evicting ``pod`` stays within every limit; logs the limit it would pass."""
        node = (pod.get("spec") or {}).get("nodeName") or ""
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        for what, count, limit in (("node", self.per_node[node], self.max_per_node),
                                   ("namespace", self.per_namespace[namespace],
                                    self.max_per_namespace),
                                   ("total", self.total, self.max_total)):
            if limit is not None and count + 1 > limit:
                log.info("maximum number of evicted pods per %s reached (limit %d), pod %s/%s "
                         "is not evicted", what, limit, namespace,
                         (pod.get("metadata") or {}).get("name"))
                return False
        return True

    def count(self, pod: Obj) -> None:
        self.per_node[(pod.get("spec") or {}).get("nodeName") or ""] += 1
        self.per_namespace[(pod.get("metadata") or {}).get("namespace") or ""] += 1
        self.total += 1
