"""``/mutate-node-status``: what a kubelet status update stores once amplification is on."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from manager.webhook.admission import AdmissionRequest
from manager.webhook.node.mutating import NodeStatusMutatingHandler
from test.apiserver.patch import json_patch

RATIO = "node.koordinator.sh/resource-amplification-ratio"
RAW = "node.koordinator.sh/raw-allocatable"


def node(allocatable: dict[str, str], annotations: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": "n1", "annotations": dict(annotations or {})},
            "status": {"allocatable": dict(allocatable)}}


def admit(new: dict, old: dict | None, op: str = "UPDATE", sub: str = "status") -> dict:
    req = AdmissionRequest(uid="u", operation=op, resource="nodes", sub_resource=sub,
                           name="n1", object=new, old_object=old)
    resp = NodeStatusMutatingHandler()(req)
    assert resp.allowed, resp.message
    return json_patch(copy.deepcopy(new), resp.patch)


ALLOC = {"cpu": "4", "memory": "8Gi", "pods": "110"}
CASES: list[tuple[str, dict, dict | None, dict[str, str], dict[str, Any]]] = [
    # (case, new node, old node, expected allocatable, expected annotations)
    ("no ratio: untouched", node(ALLOC), node(ALLOC), ALLOC, {}),
    ("ratio removed: raw allocatable dropped",
     node(ALLOC, {RAW: '{"cpu":"4"}'}), node(ALLOC), ALLOC, {}),
    ("first amplification saves raw and multiplies",
     node(ALLOC, {RATIO: '{"cpu":1.50,"memory":2.00}'}), node(ALLOC),
     {"cpu": "6", "memory": "16Gi", "pods": "110"},
     {RATIO: '{"cpu":1.50,"memory":2.00}', RAW: '{"cpu":"4","memory":"8Gi"}'}),
    ("fractional result in milli-cores, truncated",
     node({"cpu": "3", "memory": "1Gi"}, {RATIO: '{"cpu":1.33}'}), None,
     {"cpu": "3990m", "memory": "1Gi"},
     {RATIO: '{"cpu":1.33}', RAW: '{"cpu":"3","memory":"1Gi"}'}),
    ("ratio <= 1 leaves the resource",
     node(ALLOC, {RATIO: '{"cpu":1.00,"memory":0.50}'}), node(ALLOC), ALLOC,
     {RATIO: '{"cpu":1.00,"memory":0.50}', RAW: '{"cpu":"4","memory":"8Gi"}'}),
    ("unchanged allocatable: saved raw is the base",
     node({"cpu": "6", "memory": "8Gi", "kubernetes.io/batch-cpu": "1000"},
          {RATIO: '{"cpu":2.00}', RAW: '{"cpu":"3","memory":"8Gi"}'}),
     node({"cpu": "6", "memory": "8Gi"}, {RATIO: '{"cpu":2.00}'}),
     {"cpu": "6", "memory": "8Gi", "kubernetes.io/batch-cpu": "1000"},
     {RATIO: '{"cpu":2.00}', RAW: '{"cpu":"3","memory":"8Gi"}'}),
    ("kubelet changed allocatable: raw saved again",
     node({"cpu": "5", "memory": "8Gi"}, {RATIO: '{"cpu":2.00}', RAW: '{"cpu":"3"}'}),
     node({"cpu": "6", "memory": "8Gi"}),
     {"cpu": "10", "memory": "8Gi"},
     {RATIO: '{"cpu":2.00}', RAW: '{"cpu":"5","memory":"8Gi"}'}),
]


@pytest.mark.parametrize("case,new,old,allocatable,annotations", CASES,
                         ids=[c[0] for c in CASES])
def test_amplification(case: str, new: dict, old: dict | None, allocatable: dict[str, str],
                       annotations: dict[str, Any]) -> None:
    stored = admit(new, old)
    assert stored["status"]["allocatable"] == allocatable
    assert stored["metadata"]["annotations"] == annotations


def test_only_status_updates_are_mutated() -> None:
    n = node(ALLOC, {RATIO: '{"cpu":2.00}'})
    assert admit(n, None, op="CREATE") == n
    assert admit(n, node(ALLOC), sub="") == n


@pytest.mark.parametrize("annotations,key", [
    ({RATIO: "{cpu: 2}"}, RATIO),
    ({RATIO: '{"cpu":2.00}', RAW: "[1, 2]"}, RAW),
])
def test_malformed_annotation_is_an_error_naming_it(annotations: dict, key: str) -> None:
    req = AdmissionRequest(uid="u", operation="UPDATE", resource="nodes", sub_resource="status",
                           name="n1", object=node(ALLOC, annotations), old_object=node(ALLOC))
    resp = NodeStatusMutatingHandler()(req)
    assert not resp.allowed and resp.code == 500
    assert "node n1" in resp.message and key in resp.message
