"""ElasticQuota end to end: koord-scheduler as a process against the embedded API server.

koord-scheduler creates the built-in root, system and default quotas in
``koordinator-system``; a quota borrows beyond its min up to its max while its sibling is
idle, and the pod past the max stays pending with upstream's "Insufficient quotas" message;
the scheduler writes each quota's runtime, request and used back (kubectl shows them);
non-preemptible pods stop at the quota's min, and bind once it is raised; a higher-priority
pod over its quota evicts a lower-priority pod of the same quota and binds, while the other
quota's pod stays; and a pod without any quota (the default quota) schedules as usual.

With ``monitorAllQuotas``, a quota that borrowed while its sibling was idle and keeps using more
than its runtime once the sibling claims its min, for longer than ``delayEvictTime``, has its
least important preemptible pods evicted until it fits, never a non-preemptible one. A
PodGroup's members reserve their quota one by one: a gang within its quota binds whole, one
whose last member is over it binds no member, gives back what its members reserved, and each
member says which quota stopped it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.extension.coscheduling import LABEL_POD_GROUP
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
from pkg.client.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ELASTIC_QUOTAS,
    POD_GROUPS,
    PODS,
    PRIORITY_CLASSES,
)
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
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
DEADLINE = 60.0


pytestmark = pytest.mark.without_webhooks


def _high_priority_class(client: Client) -> None:
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass",
                                     "metadata": {"name": "quota-high"}, "value": 1000})


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[None]:
    _high_priority_class(client)
    with running_scheduler(kubeconfig_of(SCHEDULER), elasticquota_config(), tmp_path):
        yield


def _pod(client: Client, name: str, quota: str = "", *, preemptible: bool = True,
         priority_class: str = "", cpu: str = "1", pod_group: str = "") -> None:
    labels = {LABEL_QUOTA_NAME: quota} if quota else {}
    if not preemptible:
        labels[LABEL_PREEMPTIBLE] = "false"
    if pod_group:
        labels[LABEL_POD_GROUP] = pod_group
    client.create(PODS, guaranteed_pod(name, scheduler=SCHEDULER, cpu=cpu, labels=labels,
                                       priority_class=priority_class))


def _quota_used(client: Client, name: str) -> dict[str, str] | None:
    return (client.get(ELASTIC_QUOTAS, name, "default").get("status") or {}).get("used")


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


# Over-use revocation --------------------------------------------------------------------------

@pytest.fixture
def revoking_scheduler(kubeconfig_of: KubeconfigOf, client: Client,
                       tmp_path: Path) -> Iterator[None]:
    """koord-scheduler watching every quota's use (revokePodInterval 1s, delayEvictTime 2s).

    Upstream's chart, like ours, gives koord-scheduler no ``pods/eviction``: a user who turns
    ``monitorAllQuotas`` on grants it, as here."""
    _high_priority_class(client)
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass",
                                     "metadata": {"name": "quota-mid"}, "value": 100})
    client.create(CLUSTER_ROLES, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "koord-scheduler-quota-revoke"},
        "rules": [{"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]}]})
    client.create(CLUSTER_ROLE_BINDINGS, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "koord-scheduler-quota-revoke"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "koord-scheduler-quota-revoke"},
        "subjects": [{"kind": "ServiceAccount", "name": SCHEDULER,
                      "namespace": "koordinator-system"}]})
    config = elasticquota_config(monitorAllQuotas=True, revokePodInterval="1s",
                                 delayEvictTime="2s")
    with running_scheduler(kubeconfig_of(SCHEDULER), config, tmp_path):
        yield


def test_a_quota_over_its_runtime_too_long_gives_back_its_least_important_pods(
        srv: ServerHandle, client: Client, revoking_scheduler: None) -> None:
    srv.add_nodes(1, cpu="4", memory="8Gi")
    client.create(ELASTIC_QUOTAS, make_quota("team-a", {"cpu": "4"}, {"cpu": "1"}))
    client.create(ELASTIC_QUOTAS, make_quota("team-b", {"cpu": "4"}, {"cpu": "2"}))
    # team-b is idle: team-a borrows the whole node. Its least important pod (priority 0)
    # is non-preemptible.
    _pod(client, "fixed", "team-a", preemptible=False)
    _pod(client, "high", "team-a", priority_class="quota-high")
    low = ["low-0", "low-1"]
    for name in low:
        _pod(client, name, "team-a", priority_class="quota-mid")
    team_a = ["fixed", "high", *low]
    wait_for(lambda: len(bound(client, team_a)) == 4, DEADLINE, what="team-a's pods bound")

    # team-b claims its min: team-a's runtime drops to 2 while it uses 4. Two seconds on,
    # its two least important preemptible pods are evicted; the non-preemptible one never is.
    _pod(client, "claim", "team-b", cpu="2")
    wait_for(lambda: all(_gone(client, n) for n in low), DEADLINE,
             what="team-a's low-priority pods evicted")
    wait_for(lambda: node_of(client, "claim"), DEADLINE, what="team-b's pod bound")
    assert bound(client, ["fixed", "high"]) == ["fixed", "high"]
    wait_for(lambda: _quota_used(client, "team-a") == {"cpu": "2"}, DEADLINE,
             what=f"team-a's used back within its runtime: {_quota_used(client, 'team-a')}")
    assert not _gone(client, "fixed") and not _gone(client, "high")


# Gangs ---------------------------------------------------------------------------------------

@pytest.fixture
def gang_scheduler(kubeconfig_of: KubeconfigOf, client: Client,
                   tmp_path: Path) -> Iterator[None]:
    """koord-scheduler running Coscheduling and ElasticQuota in upstream's shipped order."""
    with running_scheduler(kubeconfig_of(SCHEDULER), elasticquota_config(gangs=True), tmp_path):
        yield


def _gang(client: Client, name: str, quota: str, n: int) -> list[str]:
    client.create(POD_GROUPS, {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": n, "scheduleTimeoutSeconds": 600}})
    names = [f"{name}-{i}" for i in range(n)]
    for member in names:
        _pod(client, member, quota, pod_group=name)
    return names


def test_a_gang_is_admitted_or_refused_whole_by_its_quota(
        srv: ServerHandle, client: Client, gang_scheduler: None) -> None:
    srv.add_nodes(1, cpu="8", memory="8Gi")
    client.create(ELASTIC_QUOTAS, make_quota("team-a", {"cpu": "3"}))
    client.create(ELASTIC_QUOTAS, make_quota("team-b", {"cpu": "3"}))
    fits = _gang(client, "fits", "team-a", 3)
    wait_for(lambda: len(bound(client, fits)) == 3, DEADLINE, what="team-a's gang bound")

    _pod(client, "base", "team-b")
    wait_for(lambda: node_of(client, "base"), DEADLINE, what="team-b's first pod bound")
    wait_for(lambda: _quota_used(client, "team-b") == {"cpu": "1"}, DEADLINE,
             what="team-b's used written back")
    # team-b has room for two more: the gang's third member is refused, and the two
    # reserved members are sent back with the quota's answer.
    big = _gang(client, "big", "team-b", 3)
    quota_says = ("Insufficient quotas, quotaName: team-b, runtime: cpu:3, used: cpu:3, "
                  "pod's request: cpu:1, exceedDimensions: [cpu]")
    wait_for(lambda: all(quota_says in unschedulable_message(client, n) for n in big),
             DEADLINE, what="every member names team-b: "
             f"{[unschedulable_message(client, n) for n in big]}")
    assert bound(client, big) == []
    wait_for(lambda: _quota_used(client, "team-b") == {"cpu": "1"}, DEADLINE,
             what=f"team-b's used back to 1: {_quota_used(client, 'team-b')}")
    assert bound(client, big) == []
