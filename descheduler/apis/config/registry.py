"""The descheduler's in-tree plugins and the extension points each implements.

Corresponds to Koordinator ``pkg/descheduler/framework/plugins`` registered by
``cmd/koord-descheduler/app`` (Koordinator's own plugins and the sigs.k8s.io/descheduler
v0.35.1 plugins it wraps). The configuration checks plugin names and placements against it;
the framework will build the plugins from the same names.
"""

from __future__ import annotations

DESCHEDULE, BALANCE, EVICT, FILTER = "deschedule", "balance", "evict", "filter"

# The plugin interface a point needs, as upstream's errors name it.
INTERFACES = {DESCHEDULE: "DeschedulePlugin", BALANCE: "BalancePlugin",
              EVICT: "EvictPlugin", FILTER: "FilterPlugin"}

PLUGIN_POINTS: dict[str, frozenset[str]] = {name: frozenset(points) for name, points in {
    "LowNodeLoad": (BALANCE,),
    "CustomPriority": (BALANCE,),
    "FragmentationAware": (BALANCE,),
    "ScaleDownBinPack": (BALANCE,),
    "MigrationController": (EVICT, FILTER),
    "DefaultEvictor": (EVICT, FILTER),
    "HighNodeUtilization": (BALANCE,),
    "LowNodeUtilization": (BALANCE,),
    "RemoveDuplicates": (BALANCE,),
    "RemovePodsViolatingTopologySpreadConstraint": (BALANCE,),
    "PodLifeTime": (DESCHEDULE,),
    "RemoveFailedPods": (DESCHEDULE,),
    "RemovePodsHavingTooManyRestarts": (DESCHEDULE,),
    "RemovePodsViolatingInterPodAntiAffinity": (DESCHEDULE,),
    "RemovePodsViolatingNodeAffinity": (DESCHEDULE,),
    "RemovePodsViolatingNodeTaints": (DESCHEDULE,),
}.items()}
