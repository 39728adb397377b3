"""Node/NodeMetric/pod scenarios with the batch and mid values upstream's formulas give
(upstream `plugins/batchresource` and `plugins/midresource`); shared by the formula test and
the e2e test, which must agree on every number."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from api.extension.resource import BATCH_CPU, BATCH_MEMORY, MID_CPU, MID_MEMORY

G = 10**9
FRESH = "fresh"  # NodeMetric updated now
STALE = "stale"  # NodeMetric older than degradeTimeMinutes


# (name, priority class label or None, requests cpu, requests memory, phase, usage or None)
PodRow = tuple[str, str | None, str, str, str, tuple[str, str] | None]


@dataclass
class Case:
    name: str
    config: dict[str, Any]  # colocation-config
    pods: list[PodRow]
    expect: dict[str, int | None]  # None: resource absent
    system_usage: tuple[str, str] = ("7", "12G")
    capacity: tuple[str, str] = ("100", "120G")
    allocatable: tuple[str, str] | None = None  # None: same as capacity
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    metric: str = FRESH
    node_usage: tuple[str, str] | None = None
    prod_reclaimable: tuple[str, str] | None = None
    host_apps: list[tuple[str, str, str]] = field(default_factory=list)  # (priority, cpu, mem)
    dangling: list[tuple[str, str, str, str]] = field(default_factory=list)  # name, prio, cpu, mem


ON = {"enable": True, "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65}
PROD = "koord-prod"
BATCH = "koord-batch"
BASE_PODS: list[PodRow] = [("prod-a", PROD, "10", "10G", "Running", ("11", "11G")),
                           ("prod-b", PROD, "20", "30G", "Running", ("22", "22G")),
                           ("batch-a", BATCH, "0", "0", "Running", ("5", "5G")),
                           ("done", PROD, "40", "40G", "Succeeded", None)]

CASES: list[Case] = [
    # upstream's worked example: 100000 − 35000 − 7000 − 33000; 120 − 42 − 12 − 33 (G)
    Case("usage", ON, BASE_PODS, {BATCH_CPU: 25000, BATCH_MEMORY: 33 * G}),
    # request: memory 120 − 42 − 0 (reserved) − 40 = 38G; cpu stays on usage
    Case("memory request", {**ON, "memoryCalculatePolicy": "request"}, BASE_PODS,
         {BATCH_CPU: 25000, BATCH_MEMORY: 38 * G}),
    # maxUsageRequest: HPMaxUsedReq = max(10,11)+max(20,22)=33 cores; max(10,11)+max(30,22)=41G
    Case("maxUsageRequest", {**ON, "cpuCalculatePolicy": "maxUsageRequest",
                             "memoryCalculatePolicy": "maxUsageRequest"}, BASE_PODS,
         {BATCH_CPU: 25000, BATCH_MEMORY: 25 * G}),
    # reclaim thresholds: margin 50% → 100−50−7−33 = 10 cores; memory 20% margin → 120−24−12−33
    Case("reclaim thresholds", {**ON, "cpuReclaimThresholdPercent": 50,
                                "memoryReclaimThresholdPercent": 80}, BASE_PODS,
         {BATCH_CPU: 10000, BATCH_MEMORY: 51 * G}),
    # batchCPUThresholdPercent caps at 20% of capacity
    Case("batch threshold cap", {**ON, "batchCPUThresholdPercent": 20,
                                 "batchMemoryThresholdPercent": 10}, BASE_PODS,
         {BATCH_CPU: 20000, BATCH_MEMORY: 12 * G}),
    # kubelet reserves 10 cores / 20G > system usage: 100−35−10−33 = 22; 120−42−20−33 = 25
    Case("kubelet reservation", ON, BASE_PODS, {BATCH_CPU: 22000, BATCH_MEMORY: 25 * G},
         allocatable=("90", "100G")),
    # annotation reserves CPUs 0-11 (12 cores) and 15G: 100−35−12−33 = 20; 120−42−15−33 = 30
    Case("annotation reservation", ON, BASE_PODS, {BATCH_CPU: 20000, BATCH_MEMORY: 30 * G},
         annotations={"node.koordinator.sh/reservation": json.dumps(
             {"resources": {"memory": "15G"}, "reservedCPUs": "0-11"})}),
    # prod host app using 3 cores / 3G adds to system usage; batch app does not
    Case("host applications", ON, BASE_PODS, {BATCH_CPU: 22000, BATCH_MEMORY: 30 * G},
         host_apps=[(PROD, "3", "3G"), (BATCH, "50", "50G")]),
    # a prod pod without metric counts its request as used; a dangling prod metric counts too
    Case("no metric and dangling", ON,
         [("prod-a", PROD, "10", "10G", "Running", None)],
         {BATCH_CPU: 100000 - 35000 - 7000 - 10000 - 4000, BATCH_MEMORY: 52 * G},
         dangling=[("gone", PROD, "4", "4G"), ("gone-batch", BATCH, "9", "9G")]),
    # stale NodeMetric: degraded, resources removed
    Case("degrade on stale NodeMetric", ON, BASE_PODS,
         {BATCH_CPU: None, BATCH_MEMORY: None, MID_CPU: None, MID_MEMORY: None}, metric=STALE),
    # colocation disabled on the node by a nodeConfigs entry
    Case("nodeConfigs override disables", {**ON, "nodeConfigs": [
        {"name": "off", "nodeSelector": {"matchLabels": {"pool": "off"}}, "enable": False}]},
         BASE_PODS, {BATCH_CPU: None, BATCH_MEMORY: None}, labels={"pool": "off"}),
    # nodeConfigs override of the reclaim percent for matching nodes only
    Case("nodeConfigs override percent", {**ON, "nodeConfigs": [
        {"name": "hi", "nodeSelector": {"matchLabels": {"pool": "hi"}},
         "cpuReclaimThresholdPercent": 75}]},
         BASE_PODS, {BATCH_CPU: 35000, BATCH_MEMORY: 33 * G}, labels={"pool": "hi"}),
    # mid: min(prodReclaimable 8, unused 100−40) + 50% × unallocated (100−7−30 = 63 → 31.5);
    # memory: min(8, 120−50) + 50% × (120−12−40 = 68)
    Case("mid resources", {**ON, "midUnallocatedPercent": 50}, BASE_PODS,
         {MID_CPU: 8000 + 31500, MID_MEMORY: 8 * G + 34 * G},
         node_usage=("40", "50G"), prod_reclaimable=("8", "8G")),
    # mid static: 30% of capacity capped by the 20% threshold
    Case("mid static", {**ON, "midReclaimMode": "static", "midStaticCPUReservedPercent": 30,
                        "midCPUThresholdPercent": 20, "midStaticMemoryReservedPercent": 10},
         BASE_PODS, {MID_CPU: 20000, MID_MEMORY: 12 * G}),
]

__all__ = ["BATCH", "CASES", "Case", "FRESH", "G", "PROD", "STALE"]
