"""ElasticQuota with several quota trees (MultiQuotaTree), end to end: koord-scheduler as a
process with ``--feature-gates=MultiQuotaTree=true`` against the embedded API server.

A quota tree's root ElasticQuota, as koord-manager's ElasticQuotaProfile controller writes it
(labels tree-id and is-root, annotation total-resource cpu 4), limits the pods of its tree to
4 cpu although the node has 6; the default tree keeps the other 2 for its own quotas, and each
pending pod says which quota stopped it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from api.extension.elastic_quota import LABEL_QUOTA_NAME
from pkg.client.resources import ELASTIC_QUOTAS, PODS
from pkg.client.rest import Client
from scheduler.plugins.elasticquota.testing import (
    elasticquota_config,
    make_quota,
    make_tree_quota,
)
from test.apiserver import ServerHandle
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


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, tmp_path: Path) -> Iterator[None]:
    with running_scheduler(kubeconfig_of(SCHEDULER), elasticquota_config(), tmp_path,
                           extra=["--feature-gates=MultiQuotaTree=true"]):
        yield


def _pods(client: Client, prefix: str, quota: str, n: int) -> list[str]:
    names = [f"{prefix}-{i}" for i in range(n)]
    for name in names:
        client.create(PODS, guaranteed_pod(name, scheduler=SCHEDULER, cpu="2",
                                           labels={LABEL_QUOTA_NAME: quota}))
    return names


def _pending_says(client: Client, names: list[str], expected: str) -> None:
    wait_for(lambda: len(bound(client, names)) == len(names) - 1, DEADLINE,
             what=f"all but one of {names} bound: {bound(client, names)}")
    [left] = [n for n in names if not node_of(client, n)]
    wait_for(lambda: expected in unschedulable_message(client, left), DEADLINE,
             what=f"{left} says why: {unschedulable_message(client, left)!r}")


def test_a_tree_root_total_limits_its_tree_and_the_default_tree_keeps_the_rest(
        srv: ServerHandle, client: Client, scheduler: None) -> None:
    srv.add_nodes(1, cpu="6", memory="8Gi")
    client.create(ELASTIC_QUOTAS, make_tree_quota(
        "pool-root", "pool", {"cpu": "1000"}, min_={"cpu": "4"}, total={"cpu": "4"},
        is_parent=True))
    client.create(ELASTIC_QUOTAS, make_tree_quota("team-t", "pool", {"cpu": "10"},
                                                  parent="pool-root"))
    client.create(ELASTIC_QUOTAS, make_quota("team-d", {"cpu": "10"}))

    # Tree "pool": 4 of the node's 6 cpus.
    _pending_says(client, _pods(client, "t", "team-t", 3),
                  "Insufficient quotas, quotaName: team-t, runtime: cpu:4, used: cpu:4, "
                  "pod's request: cpu:2")
    # The default tree: what the tree's root took is gone from its total.
    _pending_says(client, _pods(client, "d", "team-d", 2),
                  "Insufficient quotas, quotaName: team-d, runtime: cpu:2, used: cpu:2, "
                  "pod's request: cpu:2")
