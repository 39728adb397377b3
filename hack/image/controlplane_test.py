"""The koord-manager and koord-scheduler images run against the embedded API server.

Each runs under podman (host network, nonroot as its image says) with the server's kubeconfig
and CA mounted read-only: the manager takes the Lease and serves its webhooks (WEBHOOK_HOST:
the configurations name it by URL with its CA, and a pod create goes through them), the
scheduler binds a pod, and `podman stop` ends each with exit code 0 within the grace period.
If podman cannot start a container the test fails with podman's reason; it never skips.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.image import images
from hack.image import podman as podman_cli
from pkg.client.errors import ApiError
from pkg.client.resources import LEASES, MUTATING_WEBHOOK_CONFIGURATIONS, PODS
from pkg.client.rest import Client
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_webhook_prerequisites, wait_for

NS = "koordinator-system"
GRACE = 15  # podman stop's SIGKILL deadline; a clean stop takes far less


@pytest.fixture
def srv() -> Iterator[ServerHandle]:
    s = start()
    yield s
    s.stop()


@pytest.fixture
def podman() -> Iterator[list[str]]:
    with podman_cli.podman() as cmd:
        yield cmd


def _mounts(srv: ServerHandle, tmp_path: Path) -> list[str]:
    """The kubeconfig and CA, copied world-readable (the server writes them 0600 for root and
    the control plane images run as 65532), mounted read-only under /etc/koord."""
    conf = tmp_path / "conf"
    conf.mkdir()
    shutil.copy(srv.kubeconfig, conf / "kubeconfig")
    assert srv.ca_file
    shutil.copy(srv.ca_file, conf / "ca.crt")
    for f in conf.iterdir():
        f.chmod(0o644)
    return ["-v", f"{conf}:/etc/koord:ro"]


def _run(podman: list[str], name: str, args: list[str], extra: list[str]) -> str:
    ref = podman_cli.load(podman, name)
    container = f"{name}-{uuid.uuid4().hex[:6]}"
    run = subprocess.run(
        [*podman, "run", "-d", "--name", container, "--network=host", *images.PODMAN_ULIMITS,
         *extra, ref, *args],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert run.returncode == 0, f"podman run {ref}: rc {run.returncode}: {run.stderr}"
    return container


def _stops_cleanly(podman: list[str], container: str) -> None:
    """SIGTERM ends it with 0 before podman's SIGKILL (which would give 137)."""
    began = time.monotonic()
    code = podman_cli.stop(podman, container, GRACE)
    log = podman_cli.logs(podman, container)
    assert code == 0, f"exit code {code} after SIGTERM; log:\n{log}"
    assert time.monotonic() - began < GRACE, log
    assert "Traceback" not in log, log


def _create_pod(client: Client) -> dict[str, object] | None:
    """The created pod, or None while the webhooks are unreachable (the API server refuses)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"p-{uuid.uuid4().hex[:8]}", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "pause"}]}}
    try:
        created: dict[str, object] = client.create(PODS, pod, "default")
    except ApiError as e:
        assert "failed calling webhook" in e.message, e.message
        return None
    return created


def test_manager_image_leads_serves_webhooks_and_stops(
        srv: ServerHandle, podman: list[str], tmp_path: Path) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig)
    install_webhook_prerequisites(client, NS)
    # The manager writes its serving certificate here (WEBHOOK_HOST: fs cert writer); a host
    # directory so the test can compare the CA with the configurations' caBundle.
    certs = tmp_path / "certs"
    certs.mkdir()
    certs.chmod(0o777)
    port = images.free_port()
    container = _run(podman, "koord-manager", [
        "--kubeconfig", "/etc/koord/kubeconfig",
        "--metrics-addr", f"127.0.0.1:{images.free_port()}",
        "--health-probe-addr", f"127.0.0.1:{images.free_port()}",
        "--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=500ms"],
        [*_mounts(srv, tmp_path), "-v", f"{certs}:/certs",
         "-e", "WEBHOOK_HOST=127.0.0.1", "-e", f"WEBHOOK_PORT={port}",
         "-e", "WEBHOOK_CERT_DIR=/certs"])
    logs = lambda: podman_cli.logs(podman, container)  # noqa: E731 - for the failure messages

    def holder() -> str:
        try:
            return str(client.get(LEASES, "koordinator-manager", NS)["spec"]
                       .get("holderIdentity") or "")
        except ApiError:
            return ""

    wait_for(holder, timeout=45, what=f"the manager holds the Lease; log:\n{logs()}")

    def bundles() -> set[str]:
        try:
            hooks = client.get(MUTATING_WEBHOOK_CONFIGURATIONS,
                               "koordinator-mutating-webhook-configuration")["webhooks"]
        except ApiError:
            return set()
        return {h["clientConfig"].get("caBundle", "") for h in hooks}

    wait_for(lambda: (certs / "ca-cert.pem").exists() and bundles() == {
        base64.b64encode((certs / "ca-cert.pem").read_bytes()).decode()}, timeout=30,
        what=f"the webhook configuration carries the manager's CA; log:\n{logs()}")
    wait_for(lambda: _create_pod(client), timeout=30,
             what=f"a pod create goes through the manager's webhooks; log:\n{logs()}")
    assert podman_cli.running(podman, container)
    _stops_cleanly(podman, container)


SCHEDULER_CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
profiles:
- schedulerName: koord-scheduler
"""


def test_scheduler_image_binds_a_pod_and_stops(
        srv: ServerHandle, podman: list[str], tmp_path: Path) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig)
    srv.add_nodes(1)
    mounts = _mounts(srv, tmp_path)
    (tmp_path / "conf" / "scheduler.yaml").write_text(SCHEDULER_CONFIG)
    (tmp_path / "conf" / "scheduler.yaml").chmod(0o644)
    container = _run(podman, "koord-scheduler", [
        "--config", "/etc/koord/scheduler.yaml", "--kubeconfig", "/etc/koord/kubeconfig",
        "--bind-address", "127.0.0.1", "--port", str(images.free_port())], mounts)
    client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"schedulerName": "koord-scheduler", "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "c", "image": "pause",
                                 "resources": {"requests": {"cpu": "100m"}}}]}}, "default")
    wait_for(lambda: (client.get(PODS, "p", "default").get("spec") or {}).get("nodeName"),
             timeout=45, what=f"pod bound; log:\n{podman_cli.logs(podman, container)}")
    assert podman_cli.running(podman, container)
    _stops_cleanly(podman, container)
