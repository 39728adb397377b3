"""koordlet under the chart's RBAC: a ClusterRole rule taken away and given back at run time.

The API server enforces RBAC and the chart is installed (``conftest``); a simulated-mode
koordlet runs as ServiceAccount ``koordinator-system/koordlet``. With the ``koordlet-role`` rule
that grants ``slo.koordinator.sh`` replaced by the same rule without that group, its NodeMetric
status update is answered 403: the server counts the denial, the NodeMetric keeps no status and
the koordlet logs kube's Forbidden message once (not every round). With the rule restored the
same koordlet process writes the status at its next round.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from pkg.client.resources import CLUSTER_ROLES, NODE_METRICS
from pkg.client.rest import Client
from test.apiserver import ServerHandle
from test.e2e.cluster import http_ok, wait_for
from test.e2e.conftest import Launch, denials

REPORT_INTERVAL = 30  # the floor of reportIntervalSeconds
ROLE = "koordlet-role"
USER = "system:serviceaccount:koordinator-system:koordlet"
SLO = "slo.koordinator.sh"
# The one request of a report round (the NodeMetric itself comes from the informer).
STATUS_UPDATE = (USER, "update", SLO, "nodemetrics/status")


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def expected_denials() -> frozenset[tuple[str, str, str, str]]:
    # The update, and the reads a reflector would retry if its watch ended meanwhile.
    return frozenset({STATUS_UPDATE} | {(USER, verb, SLO, resource)
                                        for verb in ("list", "watch")
                                        for resource in ("nodemetrics", "nodeslos")})


def _without_slo_group(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rules`` with ``slo.koordinator.sh`` taken out of the rule that grants the Koordinator
    groups (``config.koordinator.sh, slo.koordinator.sh, ...`` × ``*`` × ``*``)."""
    out = copy.deepcopy(rules)
    [rule] = [r for r in out if SLO in r.get("apiGroups", ())]
    assert rule["resources"] == ["*"] and rule["verbs"] == ["*"], rule
    rule["apiGroups"] = [g for g in rule["apiGroups"] if g != SLO]
    return out


def _set_rules(client: Client, rules: list[dict[str, Any]]) -> None:
    role = client.get(CLUSTER_ROLES, ROLE)
    role["rules"] = rules
    client.update(CLUSTER_ROLES, role)


def _status_update_denials(srv: ServerHandle) -> float:
    return sum(d.count for d in denials(srv) if (d.user, d.verb, d.group, d.resource) ==
               STATUS_UPDATE)


def test_a_removed_rule_denies_the_status_update_until_it_is_restored(
        srv: ServerHandle, client: Client, koordlets: Launch, tmp_path: Path) -> None:
    [node] = srv.add_nodes(1, prefix="sim-", cpu="4", memory="8Gi")
    client.create(NODE_METRICS, {
        "apiVersion": f"{SLO}/v1alpha1", "kind": "NodeMetric", "metadata": {"name": node},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": REPORT_INTERVAL}}})
    k = koordlets(node, "--simulate-metrics", f"--cgroup-root-dir={tmp_path}/cgroup")
    # Synced first (its informers list NodeMetrics and NodeSLOs), so that the first report,
    # one interval after the start, meets the narrowed role.
    wait_for(lambda: http_ok(k.metrics + "/readyz"), timeout=60,
             what=f"koordlet ready; log:\n{k.proc.log()}")
    granted = client.get(CLUSTER_ROLES, ROLE)["rules"]
    _set_rules(client, _without_slo_group(granted))

    wait_for(lambda: _status_update_denials(srv) >= 2, timeout=2 * REPORT_INTERVAL + 30,
             interval=0.5, what=f"two denied status updates; log:\n{k.proc.log()}")
    assert "status" not in client.get(NODE_METRICS, node)
    forbidden = (f'nodemetrics.{SLO} "{node}" is forbidden: User "{USER}" cannot update '
                 f'resource "nodemetrics/status" in API group "{SLO}" at the cluster scope')
    log = k.proc.log()
    assert log.count(forbidden) == 1, log  # logged once over two rounds
    assert f"update NodeMetric {node} status failed: 403 Forbidden: {forbidden}" in log

    _set_rules(client, granted)
    pid = k.proc.proc.pid
    wait_for(lambda: "status" in client.get(NODE_METRICS, node), timeout=REPORT_INTERVAL + 30,
             interval=0.5, what=f"the NodeMetric status written; log:\n{k.proc.log()}")
    assert k.proc.alive() and k.proc.proc.pid == pid  # the same process, not restarted
    status = client.get(NODE_METRICS, node)["status"]
    assert status["nodeMetric"]["nodeUsage"]["resources"]["cpu"]
