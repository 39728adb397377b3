"""``python -m scheduler.plugins.elasticquota.bench``: cost of the quota tree per pod event.

No upstream counterpart (upstream has Go benchmarks only for the calculator). Builds a quota
tree of about 1,000 quotas fed with pods and nodes, then repeats: one pod of a random leaf is
added, bound or deleted, and the runtime of that leaf is refreshed (what ElasticQuota's
PreFilter does before each pod). Prints the median and p99 of the event, of the refresh and of
both together. Target on a 2-core machine: refresh after one pod change ≤ 5 ms at p99.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from api.extension.elastic_quota import LABEL_QUOTA_IS_PARENT, LABEL_QUOTA_PARENT, ROOT_QUOTA_NAME
from scheduler.plugins.elasticquota.core import GroupQuotaManager

Obj = dict[str, Any]


def _quota(name: str, parent: str, is_parent: bool, max_cpu: int, min_cpu: int) -> Obj:
    return {"metadata": {"name": name, "namespace": "bench",
                         "labels": {LABEL_QUOTA_PARENT: parent,
                                    LABEL_QUOTA_IS_PARENT: str(is_parent).lower()}},
            "spec": {"max": {"cpu": str(max_cpu), "memory": f"{max_cpu * 4}Gi"},
                     "min": {"cpu": str(min_cpu), "memory": f"{min_cpu * 4}Gi"}}}


def _pod(name: str, cpu_milli: int, node: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "bench"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
                "requests": {"cpu": f"{cpu_milli}m", "memory": f"{cpu_milli * 4}Mi"}}}]},
            "status": {"phase": "Running" if node else "Pending"}}


@dataclass(slots=True)
class Shape:
    name: str
    fanout: tuple[int, ...]  # children per level, root first

    def build(self, rng: random.Random, pods_per_leaf: int, nodes: int) -> tuple[
            GroupQuotaManager, list[str]]:
        m = GroupQuotaManager({}, {})
        for i in range(nodes):
            m.on_node_add({"metadata": {"name": f"n{i}"}, "status": {"allocatable": {
                "cpu": "64", "memory": "256Gi"}}})
        level = [ROOT_QUOTA_NAME]
        for depth, fan in enumerate(self.fanout):
            leaf = depth == len(self.fanout) - 1
            nxt = []
            for parent in level:
                for i in range(fan):
                    name = f"{parent}-{i}" if parent != ROOT_QUOTA_NAME else f"q{i}"
                    m.update_quota(_quota(name, parent, not leaf, 64 * nodes, rng.randint(0, 8)))
                    nxt.append(name)
            level = nxt
        for leaf_name in level:
            for j in range(pods_per_leaf):
                m.on_pod_add(leaf_name, _pod(f"{leaf_name}-p{j}", rng.randint(100, 4000),
                                             rng.choice(("", "n0"))))
        for name in m.quota_names():
            m.refresh_runtime(name)
        return m, level

    def quotas(self) -> int:
        total, width = 0, 1
        for fan in self.fanout:
            width *= fan
            total += width
        return total


@dataclass(slots=True)
class Result:
    shape: str
    quotas: int
    event: list[float]
    refresh: list[float]
    both: list[float]


def _ms(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))] * 1000


def run(shape: Shape, changes: int, pods_per_leaf: int, nodes: int, seed: int) -> Result:
    rng = random.Random(seed)
    m, leaves = shape.build(rng, pods_per_leaf, nodes)
    live: dict[str, list[Obj]] = {leaf: [] for leaf in leaves}
    result = Result(shape.name, shape.quotas(), [], [], [])
    for i in range(changes):
        leaf = rng.choice(leaves)
        pods = live[leaf]
        action: Callable[[], None]
        if pods and rng.random() < 0.5:
            p = pods.pop(rng.randrange(len(pods)))
            if p["spec"]["nodeName"]:
                action = partial(m.on_pod_delete, leaf, p)
            else:
                bound = {**p, "spec": {**p["spec"], "nodeName": "n1"},
                         "status": {"phase": "Running"}}
                pods.append(bound)
                action = partial(m.on_pod_update, leaf, leaf, p, bound)
        else:
            p = _pod(f"{leaf}-x{i}", rng.randint(100, 4000), "")
            pods.append(p)
            action = partial(m.on_pod_add, leaf, p)
        t0 = time.perf_counter()
        action()
        t1 = time.perf_counter()
        m.refresh_runtime(leaf)
        t2 = time.perf_counter()
        result.event.append(t1 - t0)
        result.refresh.append(t2 - t1)
        result.both.append(t2 - t0)
    return result


SHAPES = [Shape("10x100", (10, 100)), Shape("10x10x10", (10, 10, 10)), Shape("1000 flat", (1000,))]


def table(results: list[Result]) -> str:
    head = f"{'tree':<10} {'quotas':>6} {'event p50':>10} {'event p99':>10} " \
           f"{'refresh p50':>12} {'refresh p99':>12} {'both p50':>9} {'both p99':>9}  (ms)"
    lines = [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.shape:<10} {r.quotas:>6} {_ms(r.event, 50):>10.3f} "
                     f"{_ms(r.event, 99):>10.3f} {_ms(r.refresh, 50):>12.3f} "
                     f"{_ms(r.refresh, 99):>12.3f} {_ms(r.both, 50):>9.3f} "
                     f"{_ms(r.both, 99):>9.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scheduler.plugins.elasticquota.bench",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--changes", type=int, default=2000, help="pod events per tree")
    p.add_argument("--pods-per-leaf", type=int, default=5)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--shapes", default=",".join(s.name for s in SHAPES))
    args = p.parse_args(argv)
    wanted = set(args.shapes.split(","))
    results = [run(s, args.changes, args.pods_per_leaf, args.nodes, args.seed)
               for s in SHAPES if s.name in wanted]
    print(table(results))
    refreshes = [x for r in results for x in r.refresh]
    print(f"median of all refreshes: {statistics.median(refreshes) * 1000:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
