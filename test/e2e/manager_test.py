"""koord-manager end to end: two real processes against the embedded API server.

Each replica runs as ``python -m manager.main`` as the chart's ``koord-manager`` ServiceAccount
(the API server enforces the installed chart's RBAC: ``conftest``), with its own metrics, probe
and webhook ports, and short lease timings. Both serve the admission webhooks (with the
certificates in the shared Secret); only the holder of the Lease ``koordinator-manager``
runs the controllers. Killing the leader hands the Lease to the standby within the lease
duration, while the standby's webhooks keep answering.

With WEBHOOK_HOST (a manager outside the cluster) the webhook configurations name one replica by
URL, with its own CA: only the leader writes them, so a standby never takes them over, and a
kill -9 or a SIGTERM of the leader points them at the new leader within one lease period.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from api.meta import parse_timestamp
from manager.webhook.certs import CA_CERT
from pkg.client.errors import ApiError
from pkg.client.resources import (
    LEASES,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NODE_METRICS,
    NODE_SLOS,
    PODS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
)
from pkg.client.rest import Client
from pkg.component import DEFAULT_GRACE_PERIOD
from test.apiserver import ServerHandle
from test.e2e.cluster import ComponentProcess, free_port, http_ok, wait_for
from test.e2e.conftest import KubeconfigOf

NS = "koordinator-system"
MANAGER = "koord-manager"
LEASE = "koordinator-manager"
LEASE_DURATION = 2.0
LEADER_FLAGS = [f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
                "--leader-elect-renew-deadline=1500ms", "--leader-elect-retry-period=500ms"]
STARTED = "controllers started:"
# How long a replica may take to start (imports, informer sync, webhook certificates) on a
# busy 2-core machine; no test asserts anything on how fast that is.
STARTUP = 120.0


@dataclass
class Replica:
    proc: ComponentProcess
    probes: str
    metrics: str
    webhook_port: int

    def log(self) -> str:
        return self.proc.log()

    def identity(self) -> str:
        """The Lease identity this replica announced in its log."""
        marker = "(identity "
        line = next(line for line in self.log().splitlines() if marker in line)
        return line.split(marker, 1)[1].rstrip(")")


def start_manager(kubeconfig: str, workdir: Path, name: str,
                  monkeypatch: pytest.MonkeyPatch) -> Replica:
    probes, metrics, webhook = free_port(), free_port(), free_port()
    # The webhook server reads its port and cert dir from the environment, as upstream.
    monkeypatch.setenv("WEBHOOK_PORT", str(webhook))
    monkeypatch.setenv("WEBHOOK_CERT_DIR", str(workdir / f"{name}-certs"))
    proc = ComponentProcess("manager.main", [
        "--kubeconfig", kubeconfig, "--metrics-addr", f"127.0.0.1:{metrics}",
        "--health-probe-addr", f"127.0.0.1:{probes}", *LEADER_FLAGS, "-v", "2"],
        workdir / f"{name}.log")
    return Replica(proc, f"http://127.0.0.1:{probes}", f"http://127.0.0.1:{metrics}", webhook)


# Starts the leader-electing replica of that name; every one is stopped after the test.
StartReplica = Callable[[str], Replica]


@pytest.fixture
def replica(kubeconfig_of: KubeconfigOf, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[StartReplica]:
    started: list[Replica] = []

    def start_replica(name: str) -> Replica:
        started.append(start_manager(kubeconfig_of(MANAGER), tmp_path, name, monkeypatch))
        return started[-1]

    yield start_replica
    for r in started:
        r.proc.stop()


def _metrics(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as r:
        return r.read().decode()


def _leading(replica: Replica) -> float:
    """The replica's ``leader_election_master_status`` gauge for the manager's Lease."""
    sample = f'leader_election_master_status{{name="{NS}/{LEASE}"}} '
    for line in _metrics(replica.metrics + "/metrics").splitlines():
        if line.startswith(sample):
            return float(line[len(sample):])
    return 0.0


def _stamp(micro_time: str) -> float:
    """A Lease MicroTime (RFC 3339 with microseconds) as seconds since the epoch."""
    stamp = parse_timestamp(micro_time)
    assert stamp is not None, micro_time
    return stamp


def _holder(client: Client) -> str:
    try:
        return client.get(LEASES, LEASE, NS)["spec"].get("holderIdentity") or ""
    except ApiError:
        return ""


def _names(client: Client, resource: Resource) -> set[str]:
    return {o["metadata"]["name"] for o in client.list(resource)["items"]}


def _validate_pod(client: Client, replica: Replica) -> dict[str, Any]:
    """POST an AdmissionReview to the replica's ``/validate-pod`` over HTTPS, trusting only
    the CA of the shared webhook Secret. The pod combines BE with a prod priority, which
    upstream's validating webhook refuses."""
    ca = base64.b64decode(client.get(SECRETS, "koordinator-webhook-certs", NS)["data"]
                          ["ca-cert.pem"]).decode()
    ctx = ssl.create_default_context(cadata=ca)
    ctx.check_hostname = False  # the certificate names the webhook Service, not 127.0.0.1
    uid = str(uuid.uuid4())
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default",
                        "labels": {"koordinator.sh/qosClass": "BE"}},
           "spec": {"priority": 9500, "containers": [{"name": "c", "image": "pause"}]}}
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                          "resource": {"group": "", "version": "v1", "resource": "pods"},
                          "namespace": "default", "operation": "CREATE", "object": pod}}
    req = urllib.request.Request(
        f"https://127.0.0.1:{replica.webhook_port}/validate-pod",
        data=json.dumps(review).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
        response: dict[str, Any] = json.loads(resp.read())["response"]
    assert response["uid"] == uid
    return response


def _refuses_be_with_prod_priority(client: Client, replica: Replica) -> None:
    response = _validate_pod(client, replica)
    assert response["allowed"] is False
    assert "koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in " \
           "combination" in response["status"]["message"]


def test_one_replica_leads_and_the_standby_takes_over_within_the_lease(
        srv: ServerHandle, client: Client, replica: StartReplica) -> None:
    srv.add_nodes(2)
    a = replica("a")
    wait_for(lambda: STARTED in a.log(), timeout=STARTUP, what=f"a leads; log:\n{a.log()}")
    wait_for(lambda: _names(client, NODE_METRICS) == {"node-0", "node-1"},
             what="the leader creates a NodeMetric per node")
    wait_for(lambda: _names(client, NODE_SLOS) == {"node-0", "node-1"},
             what="the leader creates a NodeSLO per node")
    b = replica("b")
    wait_for(lambda: http_ok(b.probes + "/readyz"), timeout=STARTUP,
             what=f"b ready (webhook-ready); log:\n{b.log()}")
    assert _holder(client) == a.identity()
    time.sleep(LEASE_DURATION + 1)  # longer than a lease: b must stay a standby
    assert STARTED not in b.log() and "starting controllers" not in b.log()
    assert "created NodeMetric" not in b.log()
    assert (_leading(a), _leading(b)) == (1.0, 0.0)
    reconciles = 'controller_runtime_reconcile_total{controller="nodemetric"'
    for path in ("/metrics", "/all-metrics"):
        assert reconciles in _metrics(a.metrics + path)
    # Every replica serves the webhooks, the standby included.
    _refuses_be_with_prod_priority(client, a)
    _refuses_be_with_prod_priority(client, b)

    renewed = _stamp(client.get(LEASES, LEASE, NS)["spec"]["renewTime"])  # by a
    a.proc.kill()
    killed = time.monotonic()
    _refuses_be_with_prod_priority(client, b)  # while nobody leads
    wait_for(lambda: _holder(client) == b.identity(), timeout=30,
             interval=0.02, what="b takes the lease")
    takeover = time.monotonic() - killed
    print(f"takeover after the leader was killed: {takeover:.2f}s "
          f"(lease duration {LEASE_DURATION:g}s)")
    # b's acquireTime against a's renewal read just before the kill (a's last one came at
    # or after it; both stamps are this machine's clock): not before a full lease, and
    # at that expiry, not a lease later. Bounds on b's stamps, not on how fast a busy
    # machine lets this test see them (the exact wake is pinned on a fake clock by
    # pkg/leaderelection's tests).
    acquired = _stamp(client.get(LEASES, LEASE, NS)["spec"]["acquireTime"])
    assert LEASE_DURATION - 0.01 <= acquired - renewed < 2 * LEASE_DURATION, \
        acquired - renewed
    _refuses_be_with_prod_priority(client, b)

    wait_for(lambda: STARTED in b.log(), what=f"b runs the controllers; log:\n{b.log()}")
    srv.add_nodes(1, start=2)
    wait_for(lambda: "node-2" in _names(client, NODE_METRICS),
             what="the new leader creates the new node's NodeMetric")
    assert "created NodeMetric node-2" in b.log()
    assert _leading(b) == 1.0
    assert http_ok(b.probes + "/healthz")


def test_a_stopped_leader_releases_the_lease(client: Client, replica: StartReplica) -> None:
    a, b = replica("a"), replica("b")
    wait_for(lambda: STARTED in a.log() or STARTED in b.log(), timeout=STARTUP,
             what="one replica leads")
    leader, standby = (a, b) if STARTED in a.log() else (b, a)
    wait_for(lambda: http_ok(standby.probes + "/readyz"), timeout=STARTUP,
             what=f"standby ready; log:\n{standby.log()}")
    signalled = time.monotonic()
    leader.proc.stop()  # SIGTERM: a graceful stop gives the lease back at once
    stopped = time.monotonic()
    print(f"leader exited {stopped - signalled:.2f}s after SIGTERM")
    assert leader.proc.proc.returncode == 0
    assert stopped - signalled < DEFAULT_GRACE_PERIOD
    wait_for(lambda: _holder(client) == standby.identity(), timeout=LEASE_DURATION + 5,
             interval=0.02, what="standby takes the released lease")
    assert time.monotonic() - stopped < LEASE_DURATION
    assert "released lease" in leader.log()


def test_controllers_flag_picks_what_the_leader_runs(
        srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    srv.add_nodes(1)
    monkeypatch.setenv("WEBHOOK_PORT", str(free_port()))
    monkeypatch.setenv("WEBHOOK_CERT_DIR", str(tmp_path / "certs"))
    proc = ComponentProcess("manager.main", [
        "--kubeconfig", kubeconfig_of(MANAGER), "--metrics-addr", f"127.0.0.1:{free_port()}",
        "--health-probe-addr", f"127.0.0.1:{free_port()}", "--enable-leader-election=false",
        "--controllers=*,-nodemetric,-noderesource"], tmp_path / "m.log")
    try:
        wait_for(lambda: STARTED in proc.log(), timeout=STARTUP, what=f"started; {proc.log()}")
        assert "controllers started: nodeslo, quotaprofile" in proc.log()
        wait_for(lambda: _names(client, NODE_SLOS) == {"node-0"}, what="NodeSLO created")
        assert _names(client, NODE_METRICS) == set()
        assert client.list(LEASES, NS)["items"] == []
    finally:
        proc.stop()


MUTATING = "koordinator-mutating-webhook-configuration"
VALIDATING = "koordinator-validating-webhook-configuration"
# Beyond the lease: the standby's next acquisition attempt, the first write and a loaded
# machine's scheduling (the defect was up to the 60 s resync).
MARGIN = 8.0


def _targets(client: Client) -> set[tuple[int, str]]:
    """(port, caBundle) of every webhook in both configurations; empty while they are the
    chart's (a Service, not a replica's URL)."""
    out: set[tuple[int, str]] = set()
    for resource, name in ((MUTATING_WEBHOOK_CONFIGURATIONS, MUTATING),
                           (VALIDATING_WEBHOOK_CONFIGURATIONS, VALIDATING)):
        try:
            hooks = client.get(resource, name)["webhooks"]
        except ApiError:
            return set()
        for hook in hooks:
            cc = hook["clientConfig"]
            if "url" not in cc:
                return set()
            out.add((urlsplit(cc["url"]).port or 443, cc.get("caBundle", "")))
    return out


def _own_target(replica: Replica, workdir: Path, name: str) -> set[tuple[int, str]] | None:
    """What the configurations hold when they name ``replica`` (None before its CA exists)."""
    path = workdir / f"{name}-certs" / CA_CERT
    if not path.exists():
        return None
    return {(replica.webhook_port, base64.b64encode(path.read_bytes()).decode())}


def _webhooks_answer(client: Client) -> bool:
    """Whether the validating webhook answers: a BE pod with the koord-prod PriorityClass is
    refused. While no replica serves, the chart's failurePolicy (Ignore, as upstream) admits
    it."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"p-{uuid.uuid4().hex[:8]}", "namespace": "default",
                        "labels": {"koordinator.sh/qosClass": "BE"}},
           "spec": {"priorityClassName": "koord-prod",
                    "containers": [{"name": "c", "image": "pause"}]}}
    try:
        client.create(PODS, pod, "default")
    except ApiError as e:
        assert "cannot be used in combination" in e.message, e.message
        return True
    return False


def _two_replicas(client: Client, replica: StartReplica, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[Replica, Replica]:
    """a leads and the configurations name it; b is a ready standby."""
    monkeypatch.setenv("WEBHOOK_HOST", "127.0.0.1")
    a = replica("a")
    wait_for(lambda: _targets(client) == _own_target(a, tmp_path, "a"), timeout=60,
             what=f"the configurations name a; log:\n{a.log()}")
    b = replica("b")
    wait_for(lambda: http_ok(b.probes + "/readyz"), timeout=60,
             what=f"b ready (webhook-ready); log:\n{b.log()}")
    # b serves, but it is a standby: it leaves the configurations to the leader
    assert _targets(client) == _own_target(a, tmp_path, "a")
    assert _holder(client) == a.identity()
    assert _webhooks_answer(client)
    return a, b


def test_killed_leader_configurations_follow_the_new_leader(
        client: Client, replica: StartReplica, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _two_replicas(client, replica, tmp_path, monkeypatch)
    a.proc.kill()
    killed = time.monotonic()
    wait_for(lambda: _webhooks_answer(client), timeout=60, interval=0.1,
             what=f"the webhooks answer again; b's log:\n{b.log()}")
    took = time.monotonic() - killed
    print(f"the webhooks answer {took:.2f}s after kill -9 of the leader "
          f"(lease duration {LEASE_DURATION:g}s)")
    assert took < LEASE_DURATION + MARGIN
    assert _holder(client) == b.identity()
    assert _targets(client) == _own_target(b, tmp_path, "b")


def test_stopped_leader_hands_the_configurations_over_at_once(
        client: Client, replica: StartReplica, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _two_replicas(client, replica, tmp_path, monkeypatch)
    a.proc.stop()  # SIGTERM: the Lease is released, b need not wait for it to expire
    stopped = time.monotonic()
    assert a.proc.proc.returncode == 0
    wait_for(lambda: _targets(client) == _own_target(b, tmp_path, "b"), timeout=60,
             interval=0.05, what=f"the configurations name b; b's log:\n{b.log()}")
    took = time.monotonic() - stopped
    print(f"configurations name the new leader {took:.2f}s after the old one exited")
    assert took < LEASE_DURATION + 3
    assert _webhooks_answer(client)
