"""Kubernetes objects (node, NodeMetric, pods) for a ``cases.Case``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from manager.slo_controller.noderesource.cases import STALE, Case


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_obj(case: Case, name: str) -> dict[str, Any]:
    cap = {"cpu": case.capacity[0], "memory": case.capacity[1], "pods": "110"}
    alloc = dict(cap)
    if case.allocatable:
        alloc.update(cpu=case.allocatable[0], memory=case.allocatable[1])
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict(case.labels),
                         "annotations": dict(case.annotations)},
            "status": {"capacity": cap, "allocatable": alloc}}


def pod_objs(case: Case, node: str, namespace: str = "default") -> list[dict[str, Any]]:
    out = []
    for name, prio, cpu, mem, phase, _ in case.pods:
        requests = {} if cpu == "0" else {"cpu": cpu, "memory": mem}
        labels = {"koordinator.sh/priority-class": prio} if prio else {}
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{node}-{name}", "namespace": namespace,
                                 "labels": labels},
                    "spec": {"nodeName": node, "containers": [
                        {"name": "c", "image": "x", "resources": {"requests": requests}}]},
                    "status": {"phase": phase}})
    return out


def _res(cpu: str, mem: str) -> dict[str, Any]:
    return {"resources": {"cpu": cpu, "memory": mem}}


def metric_status(case: Case, node: str, now: float, namespace: str = "default"
                  ) -> dict[str, Any]:
    updated = now - 3600 if case.metric == STALE else now
    node_metric: dict[str, Any] = {"systemUsage": _res(*case.system_usage)}
    if case.node_usage:
        node_metric["nodeUsage"] = _res(*case.node_usage)
    pods = [{"namespace": namespace, "name": f"{node}-{name}", "priority": prio or "",
             "podUsage": _res(*usage)}
            for name, prio, _c, _m, _p, usage in case.pods if usage]
    pods += [{"namespace": namespace, "name": f"{node}-{name}", "priority": prio,
              "podUsage": _res(cpu, mem)} for name, prio, cpu, mem in case.dangling]
    status: dict[str, Any] = {"updateTime": rfc3339(updated), "nodeMetric": node_metric,
                              "podsMetric": pods}
    if case.host_apps:
        status["hostApplicationMetric"] = [
            {"name": f"app{i}", "priority": prio, "usage": _res(cpu, mem)}
            for i, (prio, cpu, mem) in enumerate(case.host_apps)]
    if case.prod_reclaimable:
        status["prodReclaimableMetric"] = {"resource": _res(*case.prod_reclaimable)}
    return status


__all__ = ["metric_status", "node_obj", "pod_objs", "rfc3339"]
