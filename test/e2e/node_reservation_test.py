"""Node reservation end to end: koord-scheduler (the real process, as the chart's ServiceAccount)
against the embedded API server. A node's ``node.koordinator.sh/reservation`` annotation keeps
resources away from pods: a pod that fits the node's allocatable stays pending with
NodeResourcesFit's "Insufficient cpu" while the annotation reserves enough, a smaller one still
lands, and the pending pod binds once the annotation is removed; ``ReservedCPUsOnly`` reserves
nothing from what the scheduler fits against.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.extension.node import ANNOTATION_NODE_RESERVATION
from pkg.client.resources import NODES, PODS
from pkg.client.rest import Client
from test.apiserver import ServerHandle
from test.e2e.cluster import (
    guaranteed_pod,
    node_of,
    running_scheduler,
    unschedulable_message,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
DEADLINE = 60.0
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: koord-scheduler
"""


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[str]:
    with running_scheduler(kubeconfig_of(SCHEDULER), CONFIG, tmp_path) as url:
        yield url


def _annotation(reservation: dict[str, object]) -> dict[str, str]:
    return {ANNOTATION_NODE_RESERVATION: json.dumps(reservation)}


def test_reserved_resources_are_kept_from_pods_until_released(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    [node] = srv.add_nodes(1, cpu="4", memory="16Gi", annotations=_annotation(
        {"resources": {"cpu": "3"}}))
    # Fits the node's 4 CPUs, not the 1 left beside the reservation.
    client.create(PODS, guaranteed_pod("big", cpu="2"))
    wait_for(lambda: "1 Insufficient cpu" in unschedulable_message(client, "big"), DEADLINE,
             what="pod big unschedulable for cpu")
    client.create(PODS, guaranteed_pod("small", cpu="500m"))
    assert wait_for(lambda: node_of(client, "small"), DEADLINE, what="pod small bound") == node
    assert node_of(client, "big") == ""

    client.patch(NODES, node, {"metadata": {"annotations": {ANNOTATION_NODE_RESERVATION: None}}})
    assert wait_for(lambda: node_of(client, "big"), DEADLINE, what="pod big bound") == node


def test_reserved_cpus_only_policy_reserves_nothing_from_the_fit(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    [node] = srv.add_nodes(1, cpu="4", memory="16Gi", annotations=_annotation(
        {"resources": {"cpu": "3"}, "reservedCPUs": "0-2", "applyPolicy": "ReservedCPUsOnly"}))
    client.create(PODS, guaranteed_pod("big", cpu="2"))
    assert wait_for(lambda: node_of(client, "big"), DEADLINE, what="pod big bound") == node
