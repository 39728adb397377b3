"""``hack/koord explain pod`` on a pod pending for quota: koord-scheduler as a process against
the embedded API server, the CLI as a user runs it.

Under a parent quota of 4 cpu, a sibling that does not lend keeps its idle min of 2, so the
other team borrows only 1 cpu past its own min: its third pod waits. The explanation shows the
quota path root → dept → team-a with each level's figures, names the blocking check and
dimension, and says why the borrowing stopped (the sibling does not lend).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.extension.elastic_quota import LABEL_QUOTA_NAME, ROOT_QUOTA_NAME
from pkg.client.resources import ELASTIC_QUOTAS, PODS
from pkg.client.rest import Client
from scheduler.plugins.elasticquota.testing import elasticquota_config, make_quota
from test.apiserver import ServerHandle
from test.e2e.cluster import (
    REPO_ROOT,
    bound,
    guaranteed_pod,
    running_scheduler,
    unschedulable_message,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
DEADLINE = 60.0


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def scheduler(srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf,
              tmp_path: Path) -> Iterator[str]:
    """The quota tree exists before koord-scheduler starts: it schedules only once its caches
    synced, so its first pod already meets team-b's idle min (a quota created while pods are
    being scheduled may reach the tree after a pod that should have waited for it)."""
    srv.add_nodes(1, cpu="8", memory="8Gi")
    client.create(ELASTIC_QUOTAS, make_quota("dept", {"cpu": "4"}, is_parent=True))
    client.create(ELASTIC_QUOTAS, make_quota("team-a", {"cpu": "3"}, {"cpu": "1"},
                                             parent="dept"))
    client.create(ELASTIC_QUOTAS, make_quota("team-b", {"cpu": "4"}, {"cpu": "2"},
                                             parent="dept", allow_lent=False))
    with running_scheduler(kubeconfig_of(SCHEDULER), elasticquota_config(), tmp_path) as url:
        yield url


def _explain(scheduler: str, pod: str, *args: str) -> str:
    out = subprocess.run([str(REPO_ROOT / "hack" / "koord"), "explain", "pod", pod,
                          "--scheduler", scheduler, *args], capture_output=True, text=True,
                         timeout=30, env=dict(os.environ, PYTHON=sys.executable))
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_explain_pod_shows_the_quota_path_and_what_blocks_the_pod(
        client: Client, scheduler: str) -> None:
    names = [f"a-{i}" for i in range(3)]
    for name in names:
        client.create(PODS, guaranteed_pod(name, scheduler=SCHEDULER, cpu="1",
                                           labels={LABEL_QUOTA_NAME: "team-a"}))
    # dept's 4 cpu: team-b keeps its min of 2, team-a gets its min of 1 and borrows 1.
    wait_for(lambda: len(bound(client, names)) == 2, DEADLINE, what="2 of team-a's pods bound")
    [left] = [n for n in names if n not in bound(client, names)]
    wait_for(lambda: "Insufficient quotas, quotaName: team-a" in
             unschedulable_message(client, left), DEADLINE,
             what=f"{left} pending for quota: {unschedulable_message(client, left)!r}")

    text = _explain(scheduler, f"default/{left}")
    assert ("Quota team-a: the pod requests cpu:1; blocked at team-a: "
            "used + request > runtime in [cpu].") in text, text
    assert f"  {ROOT_QUOTA_NAME}: runtime " in text
    assert "    dept: max cpu:4, runtime cpu:4, used cpu:2, request cpu:5" in text
    assert ("      team-a: min cpu:1, max cpu:3, runtime cpu:2, used cpu:2, request cpu:3"
            "  <- used + request > runtime in [cpu]") in text
    assert ("  hint: team-b, beside team-a under dept, does not lend (allow-lent-resource: "
            "false): it keeps its min cpu:2 while using cpu:0") in text

    section = json.loads(_explain(scheduler, f"default/{left}", "-o", "json"))["quota"]
    assert [level["name"] for level in section["path"]] == [ROOT_QUOTA_NAME, "dept", "team-a"]
    assert section["blocked"] == [{"quota": "team-a", "check": "runtime", "dimensions": ["cpu"]}]
