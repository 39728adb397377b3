"""Batch resources per NUMA zone (upstream ``calculateOnNUMALevel``): the zone split of pods,
system usage and reservations, and the NodeResourceTopology zone list update."""

from __future__ import annotations

import json
from typing import Any

from api.configuration.slo_controller_config import parse_colocation_config
from api.extension.cpu_normalization import ANNOTATION_CPU_NORMALIZATION_RATIO
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from manager.slo_controller.noderesource import calculator, inputs
from manager.slo_controller.noderesource.cases import CASES, G
from manager.slo_controller.noderesource.cases_fixtures import metric_status, node_obj, pod_objs
from manager.slo_controller.noderesource.framework import NodeResource, PluginInputs, PodInfo
from manager.slo_controller.noderesource.numazone import update_zone_list, zone_inputs

NOW = 1_800_000_000.0
BASE = CASES[0]  # 100 cores / 120G, system 7 / 12G, prod pods use 11+22 cores, 11G+22G


def zone(name: str, cpu: str = "50", memory: str = "60G",
         extra: list[dict[str, str]] | None = None) -> dict[str, Any]:
    resources = [{"name": "cpu", "capacity": cpu, "allocatable": cpu, "available": cpu},
                 {"name": "memory", "capacity": memory, "allocatable": memory,
                  "available": memory}]
    return {"name": name, "type": "Node", "resources": resources + (extra or [])}


def nrt(*zones: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n1"}, "topologyPolicies": ["None"], "zones": list(zones)}


def run(topology: dict[str, Any], config: dict[str, Any] | None = None,
        pinned: dict[str, list[int]] | None = None, now: float = NOW) -> NodeResource:
    cfg = parse_colocation_config(json.dumps(config or BASE.config))
    node = node_obj(BASE, "n1")
    pods = []
    for pod in pod_objs(BASE, "n1"):
        nodes = (pinned or {}).get(pod["metadata"]["name"])
        if nodes is not None:
            pod["metadata"]["annotations"] = {"scheduling.koordinator.sh/resource-status":
                json.dumps({"numaNodeResources": [{"node": n} for n in nodes]})}
        pods.append(inputs.pod_info(pod))
    return calculator.calculate(cfg, cfg.for_node(node), node, metric_status(BASE, "n1", NOW),
                                pods, now, extra=PluginInputs(topology=topology))


def test_even_split_without_allocation() -> None:
    nr = run(nrt(zone("node-0"), zone("node-1")))
    # per zone: 50000 − 17500 (35%) − 3500 (system / 2) − 16500 (HP used / 2)
    assert nr.zone_resources == {
        "node-0": {BATCH_CPU: 12500, BATCH_MEMORY: 16_500_000_000},
        "node-1": {BATCH_CPU: 12500, BATCH_MEMORY: 16_500_000_000}}
    assert nr.resources[BATCH_CPU] == 25000  # the node level is unchanged


def test_pod_pinned_to_one_numa_node() -> None:
    nr = run(nrt(zone("node-0"), zone("node-1")), pinned={"n1-prod-b": [1]})
    # prod-b's 22 cores / 22G all land on node-1; prod-a still splits 5.5 / 5.5G
    assert nr.zone_resources["node-0"] == {BATCH_CPU: 23500, BATCH_MEMORY: 27_500_000_000}
    assert nr.zone_resources["node-1"] == {BATCH_CPU: 1500, BATCH_MEMORY: 5_500_000_000}


def test_out_of_range_numa_ids_are_ignored() -> None:
    even = run(nrt(zone("node-0"), zone("node-1"))).zone_resources
    assert run(nrt(zone("node-0"), zone("node-1")),
               pinned={"n1-prod-b": [7]}).zone_resources == even


def test_no_cpu_memory_zones_no_zone_results() -> None:
    bare = {"name": "node-0", "type": "Node", "resources": [
        {"name": "nvidia.com/gpu", "capacity": "1", "allocatable": "1", "available": "1"}]}
    assert run(nrt(bare)).zone_resources == {}
    assert run(nrt()).zone_resources == {}


def test_malformed_zone_keeps_node_level() -> None:
    nr = run(nrt(zone("node-0", cpu="many")))
    assert nr.zone_resources == {}
    assert nr.resources[BATCH_CPU] == 25000


def test_degraded_node_has_no_zone_results() -> None:
    nr = run(nrt(zone("node-0")), config={**BASE.config, "degradeTimeMinutes": 15},
             now=NOW + 16 * 60)
    assert nr.zone_resources == {}
    assert nr.resets[BATCH_CPU]


def test_zone_list_update() -> None:
    nr = NodeResource(zone_resources={"node-0": {BATCH_CPU: 10000, BATCH_MEMORY: 8 * G}})
    zones = [zone("node-0"), zone("node-1", extra=[
        {"name": BATCH_CPU, "capacity": "7", "allocatable": "7", "available": "7"}])]
    assert update_zone_list(zones, nr, 0.1)
    names = [r["name"] for r in zones[0]["resources"]]
    assert names == sorted(names)  # new entries added in name order
    entry = {r["name"]: r for r in zones[0]["resources"]}
    assert entry[BATCH_CPU] == {"name": BATCH_CPU, "capacity": "10k", "allocatable": "10k",
                                "available": "10k"}
    assert entry[BATCH_MEMORY]["allocatable"] == "8G"
    # a zone without results is zeroed, not removed
    assert {r["name"]: r["allocatable"] for r in zones[1]["resources"]}[BATCH_CPU] == "0"
    # within the diff threshold: nothing to write
    nr.zone_resources["node-0"][BATCH_CPU] = 10500
    assert not update_zone_list(zones, nr, 0.1)
    # past it; and the cpu normalization ratio scales batch-cpu
    nr.annotations[ANNOTATION_CPU_NORMALIZATION_RATIO] = "1.20"
    assert update_zone_list(zones, nr, 0.1)
    entry = {r["name"]: r for r in zones[0]["resources"]}
    assert entry[BATCH_CPU]["allocatable"] == "12600"


def test_pod_without_metric_counts_in_max_used_request() -> None:
    pod = PodInfo("default/p", "Running", "koord-prod", "LS", {"cpu": 4000, "memory": 4 * G})
    (only,) = zone_inputs(nrt(zone("node-0")), node_obj(BASE, "n1"), [pod], None,
                          {"cpu": 0, "memory": 0}) or []
    # unlike the node level (upstream quirk), the zone level adds the request to HPMaxUsedReq
    assert only.hp_max_used_request == {"cpu": 4000, "memory": 4 * G}
    assert only.hp_used == only.hp_request == {"cpu": 4000, "memory": 4 * G}
