"""koordlet eviction end to end: a real ``python -m koordlet.main`` in simulated mode
(``--simulate-metrics``: node and pod memory usage come from the pods'
``sim.koordinator.sh/usage`` annotations) under the chart's ``koordlet`` ServiceAccount, with
``--feature-gates=MemoryEvict=true`` and a NodeSLO ``memoryEvictThresholdPercent``.

When the annotated usage puts the node over the threshold, the lowest-priority pod labelled
``koordinator.sh/eviction-enabled: "true"`` goes through the Eviction API, with upstream's
``evictPodSuccess`` event; the higher-priority one stays until the node is over the threshold
again, and a pod that did not opt in, or is above ``evictEnabledPriorityThreshold``, never goes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pkg.client.errors import ApiError
from pkg.client.resources import EVENTS, NODE_SLOS, PODS, PRIORITY_CLASSES
from pkg.client.rest import Client
from test.apiserver import ServerHandle
from test.e2e.cluster import wait_for
from test.e2e.conftest import Launch

pytestmark = pytest.mark.without_webhooks

ENABLED = {"koordinator.sh/eviction-enabled": "true"}
# One victim per round (upstream credits a MemoryEvict victim 1000× its usage), the next one
# after the cool time: the default 4 s is kept, so the test waits well within its timeouts.
EVICTION_TIMEOUT = 30.0


def _priority_class(client: Client, name: str, value: int) -> None:
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass", "metadata": {"name": name},
                                     "value": value})


def _pod(client: Client, name: str, node: str, priority_class: str, memory: str,
         labels: dict[str, str]) -> dict[str, Any]:
    return client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"koordinator.sh/qosClass": "BE", **labels},
                     "annotations": {"sim.koordinator.sh/usage": json.dumps(
                         {"cpu": "100m", "memory": memory})}},
        "spec": {"nodeName": node, "priorityClassName": priority_class,
                 "containers": [{"name": "c", "image": "pause"}]}}, "default")


def _evicted(client: Client, name: str) -> bool:
    """Gone, or being deleted (the simulated kubelet finishes it)."""
    try:
        pod = client.get(PODS, name, "default")
    except ApiError as e:
        if e.status == 404:
            return True
        raise
    return bool(pod["metadata"].get("deletionTimestamp"))


def _events(client: Client, name: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, "default")["items"]
            if e["involvedObject"].get("kind") == "Pod" and e["involvedObject"]["name"] == name]


def _success_event(client: Client, name: str) -> dict[str, Any] | None:
    return next((e for e in _events(client, name) if e["reason"] == "evictPodSuccess"), None)


def test_memory_evict_takes_the_lowest_priority_opted_in_pod_first(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    [node] = srv.add_nodes(1, prefix="evict-", cpu="4", memory="10Gi", annotations={
        "sim.koordinator.sh/system-usage": json.dumps({"cpu": "100m", "memory": "1Gi"})})
    _priority_class(client, "e2e-batch-5000", 5000)
    _priority_class(client, "e2e-batch-5500", 5500)
    _priority_class(client, "e2e-mid-7000", 7000)
    client.create(NODE_SLOS, {
        "apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeSLO",
        "metadata": {"name": node},
        "spec": {"resourceUsedThresholdWithBE": {
            "enable": True, "memoryEvictThresholdPercent": 70,
            "evictEnabledPriorityThreshold": 5999}}})
    # 1 GiB system + 6 GiB of pods = 70 % of 10 GiB: at the threshold
    pods = {"low": ("e2e-batch-5000", "2Gi", ENABLED),
            "high": ("e2e-batch-5500", "2Gi", ENABLED),
            "not-opted": ("e2e-batch-5000", "1Gi", {}),
            "mid": ("e2e-mid-7000", "1Gi", ENABLED)}
    for name, (priority_class, memory, labels) in pods.items():
        _pod(client, name, node, priority_class, memory, labels)
    wait_for(lambda: all((p.get("status") or {}).get("phase") == "Running"
                         for p in client.list(PODS, "default")["items"]),
             what="simulated kubelet running the pods")
    k = koordlets(node, "--simulate-metrics", f"--cgroup-root-dir={tmp_path}/cgroup",
                  "--feature-gates=MemoryEvict=true")

    event = wait_for(lambda: _success_event(client, "low"), timeout=EVICTION_TIMEOUT,
                     what=f"low evicted; koordlet log:\n{k.proc.log()}")
    assert event["type"] == "Warning"
    assert event["source"].get("component") == "koordlet"
    assert event["message"] == ("evict Pod:default/low, reason: evicted, message: trigger by "
                                "koordlet feature MemoryEvict, kill pod: low")
    wait_for(lambda: _evicted(client, "low"), what="low deleted through the Eviction API")
    # One victim per round: the higher-priority pod was not taken with it.
    assert not _evicted(client, "high") and not _success_event(client, "high")

    # 50 % once low is gone; pushing the node back over the threshold takes the next in line.
    client.patch(PODS, "not-opted", {"metadata": {"annotations": {
        "sim.koordinator.sh/usage": json.dumps({"cpu": "100m", "memory": "3Gi"})}}},
        "default")
    wait_for(lambda: _success_event(client, "high"), timeout=EVICTION_TIMEOUT,
             what=f"high evicted; koordlet log:\n{k.proc.log()}")
    wait_for(lambda: _evicted(client, "high"), what="high deleted through the Eviction API")
    # Neither the pod that did not opt in nor the one above the priority threshold is a victim.
    for name in ("not-opted", "mid"):
        assert not _evicted(client, name) and not _success_event(client, name), name
