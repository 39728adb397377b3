"""ElasticQuota end to end: koord-scheduler as a process against the embedded API server.

koord-scheduler creates the built-in root, system and default quotas in
``koordinator-system``; a quota borrows beyond its min up to its max while its sibling is
idle, and the pod past the max stays pending with upstream's "Insufficient quotas" message;
the scheduler writes each quota's runtime, request and used back (kubectl shows them);
non-preemptible pods stop at the quota's min, and bind once it is raised; a higher-priority
pod over its quota evicts a lower-priority pod of the same quota and binds, while the other
quota's pod stays; and a pod without any quota (the default quota) schedules as usual.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    DEFAULT_QUOTA_NAME,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_NAME,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
)
from pkg.client.errors import is_not_found
from pkg.client.resources import ELASTIC_QUOTAS, PODS, PRIORITY_CLASSES
from pkg.client.rest import Client
from scheduler.plugins.elasticquota.testing import elasticquota_config, make_quota
from test.apiserver import ServerHandle
from test.apiserver.testing import Kubectl
from test.e2e.cluster import (
    bound,
    guaranteed_pod,
    node_of,
    running_scheduler,
    unschedulable_message,
    wait_for,
)
from test.e2e.conftest import ChartSkip, KubeconfigOf, webhook_configurations

SCHEDULER = "koord-scheduler"
DEADLINE = 60.0


@pytest.fixture
def chart_skip() -> ChartSkip:
    return webhook_configurations  # no koord-manager here


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[None]:
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass",
                                     "metadata": {"name": "quota-high"}, "value": 1000})
    with running_scheduler(kubeconfig_of(SCHEDULER), elasticquota_config(), tmp_path):
        yield


def _pod(client: Client, name: str, quota: str = "", *, preemptible: bool = True,
         priority_class: str = "") -> None:
    labels = {LABEL_QUOTA_NAME: quota} if quota else {}
    if not preemptible:
        labels[LABEL_PREEMPTIBLE] = "false"
    client.create(PODS, guaranteed_pod(name, scheduler=SCHEDULER, cpu="1", labels=labels,
                                       priority_class=priority_class))


def _gone(client: Client, name: str) -> bool:
    try:
        client.get(PODS, name, "default")
    except Exception as err:
        if is_not_found(err):
            return True
        raise
    return False


def test_quotas_borrow_up_to_max_and_non_preemptible_pods_stop_at_min(
        srv: ServerHandle, client: Client, scheduler: None) -> None:
    srv.add_nodes(1, cpu="6", memory="8Gi")
    wait_for(lambda: all(_exists(client, n) for n in
                         (ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME)),
             DEADLINE, what="the built-in quotas created")
    client.create(ELASTIC_QUOTAS, make_quota("team-a", {"cpu": "3"}, {"cpu": "1"}))
    client.create(ELASTIC_QUOTAS, make_quota("team-b", {"cpu": "3"}, {"cpu": "1"}))
    names = [f"a-{i}" for i in range(4)]
    for name in names:
        _pod(client, name, "team-a")
    # team-b is idle: team-a borrows past its min of 1 up to its max of 3.
    wait_for(lambda: len(bound(client, names)) == 3, DEADLINE, what="3 of team-a's pods bound")
    [left] = [n for n in names if not node_of(client, n)]
    expected = ("0/1 nodes are available: Insufficient quotas, quotaName: team-a, "
                "runtime: cpu:3, used: cpu:3, pod's request: cpu:1, exceedDimensions: [cpu].")
    wait_for(lambda: unschedulable_message(client, left).startswith(expected), DEADLINE,
             what=f"{left} says why: {unschedulable_message(client, left)!r}")
    # The scheduler writes the figures back; kubectl shows them.
    kubectl = Kubectl(srv)
    try:
        def figures() -> tuple[Any, ...]:
            eq = json.loads(kubectl.run("get", "elasticquota", "team-a", "-n", "default",
                                        "-o", "json").stdout)
            ann = eq["metadata"].get("annotations") or {}
            return (json.loads(ann.get(ANNOTATION_RUNTIME, "{}")),
                    json.loads(ann.get(ANNOTATION_REQUEST, "{}")),
                    (eq.get("status") or {}).get("used"))
        wait_for(lambda: figures() == ({"cpu": "3"}, {"cpu": "4"}, {"cpu": "3"}), DEADLINE,
                 what=f"team-a's runtime, request and used written back: {figures()}")
    finally:
        kubectl.close()

    np = ["b-np-0", "b-np-1"]
    for name in np:
        _pod(client, name, "team-b", preemptible=False)
    wait_for(lambda: len(bound(client, np)) == 1, DEADLINE, what="one of team-b's pods bound")
    [left] = [n for n in np if not node_of(client, n)]
    expected = ("0/1 nodes are available: Insufficient non-preemptible quotas, "
                "quotaName: team-b, min: cpu:1, nonPreemptibleUsed: cpu:1, "
                "pod's request: cpu:1, exceedDimensions: [cpu].")
    wait_for(lambda: unschedulable_message(client, left).startswith(expected), DEADLINE,
             what=f"{left} says why: {unschedulable_message(client, left)!r}")
    # Raising the min is a quota event: the pod is tried again and binds.
    client.patch(ELASTIC_QUOTAS, "team-b", {"spec": {"min": {"cpu": "2"}}}, "default")
    wait_for(lambda: node_of(client, left), DEADLINE,
             what=f"{left} bound once team-b's min is 2")


def _exists(client: Client, name: str) -> bool:
    try:
        client.get(ELASTIC_QUOTAS, name, "koordinator-system")
    except Exception as err:
        if is_not_found(err):
            return False
        raise
    return True


def test_a_higher_priority_pod_preempts_within_its_quota(
        srv: ServerHandle, client: Client, scheduler: None) -> None:
    srv.add_nodes(1, cpu="4", memory="8Gi")
    client.create(ELASTIC_QUOTAS, make_quota("team-a", {"cpu": "2"}))
    client.create(ELASTIC_QUOTAS, make_quota("team-b", {"cpu": "1"}))
    low = ["low-0", "low-1"]
    for name in low:
        _pod(client, name, "team-a")
    _pod(client, "other", "team-b")
    _pod(client, "plain")  # no quota: the default quota
    wait_for(lambda: len(bound(client, [*low, "other", "plain"])) == 4, DEADLINE,
             what="the low-priority pods bound")

    _pod(client, "high", "team-a", priority_class="quota-high")
    wait_for(lambda: node_of(client, "high"), DEADLINE, what="the high-priority pod bound")
    # One victim of team-a was enough; team-b's and the default quota's pods stay.
    assert sum(_gone(client, n) for n in low) == 1
    assert node_of(client, "other") and node_of(client, "plain")
