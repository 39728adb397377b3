"""Time to reconcile batch resources for a large cluster (upstream has no counterpart; the
issue's target is under 10 s for 5,000 nodes with 50,000 pods).

Figures:

* *calculate, cold*: summarise every pod (priority, QoS, requests), resolve every node's
  strategy, run the batch/mid formulas, prepare the node and decide whether to write;
* *calculate, warm*: the same with the controller's per-pod and per-strategy caches filled,
  which is what a steady-state resync costs;
* *write*: ``PUT nodes/<name>/status`` for every node through the embedded API server
  (``test.apiserver``), from ``--writers`` threads.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from api.configuration.slo_controller_config import parse_colocation_config
from manager.slo_controller.noderesource import calculator
from manager.slo_controller.noderesource.cases_fixtures import rfc3339
from manager.slo_controller.noderesource.controller import PodInfoCache, StrategyCache
from manager.slo_controller.noderesource.framework import PodInfo

CONFIG = {"enable": True, "cpuReclaimThresholdPercent": 65,
          "memoryReclaimThresholdPercent": 65, "memoryCalculatePolicy": "maxUsageRequest",
          "nodeConfigs": [{"name": "big", "nodeSelector": {"matchLabels": {"pool": "big"}},
                           "cpuReclaimThresholdPercent": 70}]}
PRIORITIES = ["koord-prod", "koord-prod", "koord-mid", "koord-batch", None]


def cluster(nodes: int, pods: int, seed: int = 1
            ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, list[dict]]]:
    """Nodes, NodeMetric statuses by node, and pods by node (JSON as the API returns it)."""
    rng = random.Random(seed)
    now = rfc3339(time.time())
    node_list, metrics, by_node = [], {}, {}
    for i in range(nodes):
        name = f"node-{i}"
        node_list.append({"metadata": {"name": name, "labels": {
            "pool": "big" if i % 2 else "small"}, "annotations": {}},
            "status": {"capacity": {"cpu": "96", "memory": "384Gi", "pods": "110"},
                       "allocatable": {"cpu": "94", "memory": "376Gi", "pods": "110"}}})
        pod_list, pod_metrics = [], []
        for j in range(pods // nodes):
            prio = PRIORITIES[rng.randrange(len(PRIORITIES))]
            pod_name = f"{name}-p{j}"
            cpu = rng.choice(["500m", "1", "2", "4"])
            pod_list.append({
                "metadata": {"name": pod_name, "namespace": "default", "uid": pod_name,
                             "resourceVersion": "1",
                             "labels": {"koordinator.sh/priority-class": prio} if prio else {}},
                "spec": {"nodeName": name, "containers": [{"name": "c", "resources": {
                    "requests": {"cpu": cpu, "memory": "2Gi"},
                    "limits": {"cpu": cpu, "memory": "2Gi"}}}]},
                "status": {"phase": "Running"}})
            pod_metrics.append({"namespace": "default", "name": pod_name,
                                "priority": prio or "koord-prod", "podUsage": {"resources": {
                                    "cpu": f"{rng.randrange(100, 3000)}m",
                                    "memory": f"{rng.randrange(200, 2000)}Mi"}}})
        by_node[name] = pod_list
        metrics[name] = {"updateTime": now, "podsMetric": pod_metrics, "nodeMetric": {
            "nodeUsage": {"resources": {"cpu": "40", "memory": "200Gi"}},
            "systemUsage": {"resources": {"cpu": "2", "memory": "8Gi"}}},
            "prodReclaimableMetric": {"resource": {"resources": {"cpu": "5", "memory": "10Gi"}}}}
    return node_list, metrics, by_node


def reconcile_all(nodes: list[dict[str, Any]], metrics: dict[str, dict[str, Any]],
                  by_node: dict[str, list[dict]], pod_cache: PodInfoCache,
                  strategies: StrategyCache) -> list[dict[str, Any]]:
    cfg = parse_colocation_config(json.dumps(CONFIG))
    now = time.time()
    out = []
    for node in nodes:
        name = node["metadata"]["name"]
        pods: list[PodInfo] = [pod_cache.get(p) for p in by_node[name]]
        strategy = strategies.for_node(cfg, node)
        nr = calculator.calculate(cfg, strategy, node, metrics[name], pods, now)
        new = calculator.prepare_node(node, nr)
        calculator.need_status_update(strategy, node, new, None, now)
        out.append(new)
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def write_through_apiserver(prepared: list[dict[str, Any]], writers: int) -> float:
    from pkg.client.resources import NODES
    from pkg.client.rest import Client
    from test.apiserver import start

    with start() as srv:
        client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        created = []
        for node in prepared:
            obj = client.create(NODES, {"metadata": node["metadata"]})
            obj["status"] = node["status"]
            created.append(obj)

        def put(obj: dict[str, Any]) -> None:
            client.update_status(NODES, obj)

        start_t = time.perf_counter()
        with ThreadPoolExecutor(writers) as pool:
            list(pool.map(put, created))
        elapsed = time.perf_counter() - start_t
        client.close()
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m manager.bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--skip-write", action="store_true")
    args = parser.parse_args(argv)
    nodes, metrics, by_node = cluster(args.nodes, args.pods)
    pod_cache, strategies = PodInfoCache(), StrategyCache()
    cold, prepared = timed(lambda: reconcile_all(nodes, metrics, by_node, pod_cache,
                                                 strategies))
    warm, _ = timed(lambda: reconcile_all(nodes, metrics, by_node, pod_cache, strategies))
    rows = [("calculate, cold (in process)", cold), ("calculate, warm (in process)", warm)]
    if not args.skip_write:
        rows.append((f"write status via embedded API server ({args.writers} writers)",
                     write_through_apiserver(prepared, args.writers)))
    print(f"noderesource: {args.nodes} nodes, {args.pods} pods with NodeMetrics (target < 10 s)")
    print(f"{'stage':<55} {'seconds':>8} {'nodes/s':>9}")
    for label, seconds in rows:
        print(f"{label:<55} {seconds:8.2f} {args.nodes / seconds:9.0f}")
    return 0


__all__ = ["cluster", "main", "reconcile_all"]
