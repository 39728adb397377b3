"""``python -m test.apiserver --workdir W`` restarted on the same workdir, after kill -9 or
SIGTERM: the same URL, CA and token, every object back with its resourceVersion, larger ones
for new writes, clients and informers built before the restart carry on."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.crds import crd_manifests
from pkg.client.errors import ApiError
from pkg.client.informers.factory import SharedInformerFactory
from pkg.client.informers.fake import Recorder
from pkg.client.resources import (
    CONFIGMAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODE_METRICS,
    NODES,
    PODS,
    SECRETS,
    Resource,
)
from pkg.client.rest import Client
from pkg.util.flowcontrol import Backoff
from test.e2e.cluster import wait_for

REPO_ROOT = Path(__file__).absolute().parents[2]
ENV = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
NS = "keep"


class ApiserverProcess:
    """One run of ``python -m test.apiserver`` with its READY line parsed; stderr to a file."""

    def __init__(self, workdir: Path, *extra: str) -> None:
        self.log = workdir.parent / f"{workdir.name}.log"
        with open(self.log, "a") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "test.apiserver", "--port", "0", "--workdir",
                 str(workdir), "--random-token", *extra],
                cwd=REPO_ROOT, env=ENV, stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "READY", self.log.read_text()
        self.url, self.kubeconfig = line[1], line[2]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    def terminate(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(30) == 0, self.log.read_text()


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "apiserver"


class Running(list[ApiserverProcess]):
    """The test's API server processes, killed at its end if still up."""

    def __init__(self, workdir: Path) -> None:
        super().__init__()
        self.workdir = workdir

    def start(self, *extra: str) -> ApiserverProcess:
        proc = ApiserverProcess(self.workdir, *extra)
        self.append(proc)
        return proc


@pytest.fixture
def running(workdir: Path) -> Iterator[Running]:
    procs = Running(workdir)
    yield procs
    for p in procs:
        if p.proc.poll() is None:
            p.kill()


def client_with_namespace(proc: ApiserverProcess) -> Client:
    """A client of ``proc``'s kubeconfig, with namespace NS created."""
    client = Client.from_kubeconfig(proc.kubeconfig, qps=-1)
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    return client


def node_metric_crd() -> dict:
    return next(c for c in crd_manifests()
                if c["metadata"]["name"] == "nodemetrics.slo.koordinator.sh")


def populate(client: Client) -> dict[tuple[str, str], str]:
    """Objects of several kinds; returns (kind, name) -> resourceVersion."""
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    client.create(CUSTOM_RESOURCE_DEFINITIONS, node_metric_crd())
    made: list[tuple[Resource, dict[str, Any]]] = [
        (CONFIGMAPS, {"metadata": {"name": "cm", "namespace": NS}, "data": {"k": "v"}}),
        (SECRETS, {"metadata": {"name": "sec", "namespace": NS}, "stringData": {"p": "w"}}),
        (PODS, {"metadata": {"name": "pod", "namespace": NS},
                "spec": {"containers": [{"name": "c", "image": "img"}]}}),
        (LEASES, {"metadata": {"name": "leader", "namespace": NS},
                  "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}),
        (EVENTS, {"metadata": {"name": "pod.1", "namespace": NS}, "reason": "Started",
                  "message": "started", "involvedObject": {"kind": "Pod", "name": "pod",
                                                           "namespace": NS}}),
        (NODES, {"metadata": {"name": "n1"}}),
    ]
    out = {}
    for res, obj in made:
        st = client.create(res, obj)
        out[(res.kind, st["metadata"]["name"])] = st["metadata"]["resourceVersion"]
    # The CRD serves its resource once established.
    nm = wait_for(lambda: _try_create(client, {"metadata": {"name": "n1"},
                                               "spec": {"metricCollectPolicy": {
                                                   "reportIntervalSeconds": 60}}}),
                  timeout=30, what="NodeMetric created")
    out[("NodeMetric", "n1")] = nm["metadata"]["resourceVersion"]
    doomed = client.create(CONFIGMAPS, {"metadata": {"name": "doomed", "namespace": NS}})
    client.delete(CONFIGMAPS, doomed["metadata"]["name"], NS)
    return out


def _try_create(client: Client, obj: dict) -> dict | None:
    try:
        return client.create(NODE_METRICS, obj)
    except ApiError as e:
        if e.status == 404:
            return None
        raise


RESOURCES = {r.kind: r for r in (CONFIGMAPS, SECRETS, PODS, LEASES, EVENTS, NODES,
                                 NODE_METRICS)}


def current(client: Client, kinds: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    out = {}
    for kind, name in kinds:
        res = RESOURCES[kind]
        obj = client.get(res, name, NS if res.namespaced else None)
        out[(kind, name)] = obj["metadata"]["resourceVersion"]
    return out


def test_kill_9_then_restart_keeps_url_ca_token_objects_and_resource_versions(
        workdir: Path, running: Running) -> None:
    first = running.start()
    kubeconfig = Path(first.kubeconfig).read_text()
    ca = (workdir / "pki" / "ca.crt").read_bytes()
    client = Client.from_kubeconfig(first.kubeconfig, qps=-1)
    kinds = populate(client)
    served_rv = int(client.list(CONFIGMAPS, NS)["metadata"]["resourceVersion"])
    assert served_rv >= max(int(rv) for rv in kinds.values())
    lease = client.get(LEASES, "leader", NS)

    first.kill()
    second = running.start()

    assert second.url == first.url
    assert (workdir / "pki" / "ca.crt").read_bytes() == ca
    assert Path(second.kubeconfig).read_text() == kubeconfig  # same URL, CA data and token
    # The client built before the restart, unchanged.
    assert current(client, kinds) == kinds
    with pytest.raises(ApiError) as gone:
        client.get(CONFIGMAPS, "doomed", NS)
    assert gone.value.status == 404
    crd = client.get(CUSTOM_RESOURCE_DEFINITIONS, "nodemetrics.slo.koordinator.sh")
    assert crd["spec"]["group"] == "slo.koordinator.sh"
    assert client.get(NODE_METRICS, "n1")["spec"]["metricCollectPolicy"][
        "reportIntervalSeconds"] == 60
    new = client.create(CONFIGMAPS, {"metadata": {"name": "after", "namespace": NS}})
    assert int(new["metadata"]["resourceVersion"]) > served_rv
    # Leader election's compare-and-swap on the Lease it read before the restart.
    lease["spec"]["holderIdentity"] = "b"
    renewed = client.update(LEASES, lease)
    assert int(renewed["metadata"]["resourceVersion"]) > int(new["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as stale:
        client.update(LEASES, lease)
    assert stale.value.status == 409
    # The watch cache starts over: a watch from before the restart is told to relist.
    events = list(client.watch(CONFIGMAPS, NS, resource_version=str(served_rv - 1),
                               timeout_seconds=5))
    assert events and events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_informer_started_before_a_restart_relists_and_sees_new_objects(
        workdir: Path, running: Running) -> None:
    first = running.start()
    client = client_with_namespace(first)
    for name in ("a", "b"):
        client.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": NS,
                                                "labels": {"t": "inf"}}})
    factory = SharedInformerFactory(
        client, backoff=lambda: Backoff(initial=0.05, cap=0.5, jitter=0.5))
    inf = factory.informer_for(CONFIGMAPS, namespace=NS, label_selector="t=inf")
    rec = Recorder()
    inf.add_event_handler(rec)
    factory.start()
    try:
        assert factory.wait_for_cache_sync(timeout=30)
        wait_for(lambda: inf.reflector.stats.watches >= 1, timeout=30, what="watching")
        first.kill()
        wait_for(lambda: inf.reflector.stats.errors >= 1, timeout=30, what="outage noticed")
        running.start()
        client.delete(CONFIGMAPS, "a", NS)
        client.create(CONFIGMAPS, {"metadata": {"name": "c", "namespace": NS,
                                                "labels": {"t": "inf"}}})

        def synced() -> bool:
            return {k: o["metadata"]["resourceVersion"] for k, o in rec.state().items()} == {
                f"{NS}/{o['metadata']['name']}": o["metadata"]["resourceVersion"]
                for o in client.list(CONFIGMAPS, NS, label_selector="t=inf")["items"]}

        wait_for(synced, timeout=60, what="the informer's cache matches the server")
        assert sorted(rec.state()) == [f"{NS}/b", f"{NS}/c"]
    finally:
        factory.shutdown()


def test_sigterm_snapshots_and_the_next_run_serves_it(
        workdir: Path, running: Running) -> None:
    first = running.start()
    client = client_with_namespace(first)
    cm = client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": NS}})
    first.terminate()
    snapshot = (workdir / "data" / "snapshot").stat()
    assert snapshot.st_size > 0 and snapshot.st_mode & 0o077 == 0  # Secrets are in it
    assert (workdir / "data" / "wal").stat().st_size == 0
    second = running.start()
    assert second.url == first.url
    got = client.get(CONFIGMAPS, "cm", NS)
    assert got["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]
    assert got["metadata"]["uid"] == cm["metadata"]["uid"]


def test_torn_last_record_is_dropped_and_logged(
        workdir: Path, running: Running) -> None:
    first = running.start()
    client = client_with_namespace(first)
    kept = client.create(CONFIGMAPS, {"metadata": {"name": "kept", "namespace": NS}})
    first.kill()
    # What a kill in the middle of appending the next record leaves.
    with open(workdir / "data" / "wal", "ab") as f:
        f.write(b'[999,"P","","configmaps",true,"keep/torn",{"metadata":{"na')
    second = running.start()
    assert "dropped a torn last record" in second.log.read_text()
    assert client.get(CONFIGMAPS, "kept", NS)["metadata"]["resourceVersion"] == \
        kept["metadata"]["resourceVersion"]
    names = [o["metadata"]["name"] for o in client.list(CONFIGMAPS, NS)["items"]]
    assert "torn" not in names
    new = client.create(CONFIGMAPS, {"metadata": {"name": "new", "namespace": NS}})
    assert int(new["metadata"]["resourceVersion"]) > int(kept["metadata"]["resourceVersion"])


def test_damaged_log_is_refused_naming_the_file_and_line(
        workdir: Path, running: Running) -> None:
    first = running.start()
    first.kill()
    wal = workdir / "data" / "wal"
    wal.write_bytes(b"not json\n" + wal.read_bytes())
    p = subprocess.run([sys.executable, "-m", "test.apiserver", "--workdir", str(workdir)],
                       cwd=REPO_ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert f"{wal}:1: unreadable record" in p.stderr
    assert p.stdout == ""


def test_damaged_certificate_is_refused_naming_the_file(
        workdir: Path, running: Running) -> None:
    first = running.start()
    first.terminate()
    cert = workdir / "pki" / "apiserver.crt"
    cert.write_bytes(cert.read_bytes()[:100])
    p = subprocess.run([sys.executable, "-m", "test.apiserver", "--workdir", str(workdir)],
                       cwd=REPO_ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert f"error: {cert}: cannot serve with this certificate and key" in p.stderr
    assert p.stdout == ""


def test_simulated_nodes_resume_after_a_restart(
        workdir: Path, tmp_path: Path, running: Running) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(yaml.safe_dump([{"name": "sim-a", "cpu": "8"}]))
    args = ("--simulated-nodes", str(nodes), "--node-lease-interval", "0.5")
    first = running.start(*args)
    client = Client.from_kubeconfig(first.kubeconfig, qps=-1)
    uid = client.get(NODES, "sim-a")["metadata"]["uid"]
    first.kill()
    running.start(*args)
    assert client.get(NODES, "sim-a")["metadata"]["uid"] == uid
    renewed = client.get(LEASES, "sim-a", "kube-node-lease")["spec"]["renewTime"]
    wait_for(lambda: client.get(LEASES, "sim-a", "kube-node-lease")["spec"]["renewTime"]
             != renewed, timeout=30, what="the resumed kubelet renews its Lease")
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    client.create(PODS, {"metadata": {"name": "p", "namespace": NS},
                         "spec": {"nodeName": "sim-a",
                                  "containers": [{"name": "c", "image": "img"}]}})
    wait_for(lambda: (client.get(PODS, "p", NS).get("status") or {}).get("phase") ==
             "Running", timeout=30, what="the resumed kubelet runs a bound pod")


def test_previous_port_taken_serves_on_a_new_one_with_a_log_line(
        workdir: Path, running: Running) -> None:
    import socket

    first = running.start()
    port = int(first.url.rsplit(":", 1)[1])
    first.terminate()
    squatter = socket.socket()
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past any TIME_WAIT
    squatter.bind(("127.0.0.1", port))
    squatter.listen(1)
    try:
        second = running.start()
    finally:
        squatter.close()
    assert second.url != first.url
    assert f"port {port} of the previous run is taken" in second.log.read_text()
    # The kubeconfig names the new port.
    assert second.url in Path(second.kubeconfig).read_text()
    client = Client.from_kubeconfig(second.kubeconfig, qps=-1)
    assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
