"""koordlet's main runs on this machine: metrics, hook server registration, clean stop."""

from __future__ import annotations

import json
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from koordlet import main
from koordlet.audit import auditor as audit
from koordlet.metrics import metrics
from koordlet.metricsadvisor.cpi import perf_unavailable
from test.e2e.cluster import free_port, wait_for


def unreachable_kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
        "'http://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\nusers: [{name: u, user: {}}]\n")
    return path


def metric(text: str, name: str, labels: str = "") -> float | None:
    """The value of the first series of ``name`` whose labels start with ``labels``."""
    for line in text.splitlines():
        if line.startswith(name + "{" + labels):
            return float(line.rsplit(" ", 1)[1])
    return None


def node_usage(url: str) -> tuple[str, float, float] | None:
    """The scraped text with node-a's CPU and memory usage, once both series exist (other
    tests in the same process may have left series of their own nodes)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    cpu = metric(text, "koordlet_node_used_cpu_cores", 'node="node-a"')
    memory = metric(text, "koordlet_node_used_memory_bytes", 'node="node-a"')
    return None if cpu is None or memory is None else (text, cpu, memory)


def test_koordlet_serves_node_usage_and_registers_its_hook_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "node-a")
    port = free_port()
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
    sock_dir = tempfile.TemporaryDirectory(prefix="koordlet-main-", dir="/tmp")
    stop = threading.Event()
    result: list[int] = []
    args = ["--kubeconfig", str(unreachable_kubeconfig(tmp_path)), f"--addr=127.0.0.1:{port}",
            "--cgroup-root-dir=/sys/fs/cgroup/", "--sys-root-dir=/sys/",
            f"--runtime-hooks-addr={sock_dir.name}/koordlet.sock",
            f"--runtime-hooks-config-path={tmp_path}/hooks",
            "--runtime-hooks-disable-stages=PostStopPodSandbox"]
    # main registers the node label process-wide; other tests in this process expect theirs.
    registered = metrics.node_name()
    thread = threading.Thread(target=lambda: result.append(main.main(args, stop)))
    thread.start()
    try:
        # The series appear with the first collection, both in the same round.
        text, cpu, memory = wait_for(lambda: node_usage(f"http://127.0.0.1:{port}/metrics"),
                                     timeout=30, what="koordlet_node_used_* series")
        # A rate of two /proc/stat samples over two wall-clock stamps: on a saturated machine
        # it can overshoot the core count by the stamps' jitter.
        assert 0 <= cpu <= (psutil.cpu_count() or 1) * 1.05
        assert 0 < memory < psutil.virtual_memory().total
        assert metric(text, "koordlet_start_time") is not None
        config = json.loads((tmp_path / "hooks" / "koordlet.json").read_text())
        assert config["remote-endpoint"] == "/var/run/koordlet/koordlet.sock"
        assert "PostStopPodSandbox" not in config["runtime-hooks"]
        assert Path(sock_dir.name, "koordlet.sock").is_socket()
        with pytest.raises(urllib.error.HTTPError) as events:  # gate AuditEventsHTTPHandler off
            urllib.request.urlopen(f"http://127.0.0.1:{port}/events", timeout=2)
        assert events.value.code == 404
    finally:
        stop.set()
        thread.join(timeout=15)
        sock_dir.cleanup()
        metrics.register(registered)
    assert result == [0]


def test_an_unknown_failure_policy_is_a_startup_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("NODE_NAME", "node-a")
    assert main.main(["--kubeconfig", str(unreachable_kubeconfig(tmp_path)),
                      "--runtime-hooks-failure-policy=Maybe"]) == 1
    assert "--runtime-hooks-failure-policy='Maybe': must be Fail or Ignore" in \
        capsys.readouterr().err


def test_bad_cgroup_kube_path_refuses_to_start(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "node-a")
    assert main.main(["--kubeconfig", str(unreachable_kubeconfig(tmp_path)),
                      "--cgroup-kube-path=pods/"]) == 1


def _events(url: str) -> dict | None:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            result: dict = json.loads(r.read())
            return result
    except OSError:
        return None


def test_audit_events_are_served_on_events_with_both_gates(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """AuditEvents sets up the auditor on --audit-log-dir, AuditEventsHTTPHandler serves it on
    koordlet's --addr: what a strategy records is on /events, newest first. CPICollector is on
    too: without perf events (this machine) it says so once and exports nothing."""
    monkeypatch.setenv("NODE_NAME", "node-a")
    port = free_port()
    sock_dir = tempfile.TemporaryDirectory(prefix="koordlet-main-", dir="/tmp")
    stop = threading.Event()
    result: list[int] = []
    args = ["--kubeconfig", str(unreachable_kubeconfig(tmp_path)), f"--addr=127.0.0.1:{port}",
            "--cgroup-root-dir=/sys/fs/cgroup/", "--sys-root-dir=/sys/",
            f"--runtime-hooks-addr={sock_dir.name}/koordlet.sock",
            f"--runtime-hooks-config-path={tmp_path}/hooks",
            "--feature-gates=AuditEvents=true,AuditEventsHTTPHandler=true,CPICollector=true",
            f"--audit-log-dir={tmp_path}/audit", "--audit-max-events-limit=5"]
    registered = metrics.node_name()
    thread = threading.Thread(target=lambda: result.append(main.main(args, stop)))
    thread.start()
    url = f"http://127.0.0.1:{port}/events"
    try:
        wait_for(lambda: _events(url + "?size=1"), timeout=30, what="/events served")
        audit.event(1, audit.ADJUST_BE_BY_NODE_CPU_USAGE, "update BE group to cfs_quota: 2000")
        audit.event(0, "trigger by koordlet feature BEMemoryEvict", "evict", kind="pod",
                    namespace="default", name="be-a")
        page = _events(url + "?size=1")
        assert page is not None and page["NextPageToken"]
        [newest] = page["Events"]
        assert (newest["type"], newest["namespace"], newest["name"]) == (
            "pod", "default", "be-a")
        rest = _events(f"{url}?size=5&pageToken={page['NextPageToken']}")
        assert rest is not None and rest["NextPageToken"] == ""
        assert [e["message"] for e in rest["Events"]] == ["update BE group to cfs_quota: 2000"]
        with pytest.raises(urllib.error.HTTPError) as over:
            urllib.request.urlopen(url + "?size=6", timeout=2)
        assert over.value.code == 400
        if perf_unavailable() is not None:
            # The collectors start once statesinformer synced or gave up (the API is away).
            def cpi_lines() -> list[str]:
                return [r.getMessage() for r in caplog.records
                        if r.name == "koordlet.metricsadvisor.cpi"]

            wait_for(cpi_lines, timeout=30, what="CPICollector's line")
            [line] = cpi_lines()
            assert "koordlet_container_cpi is not collected" in line
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                assert "koordlet_container_cpi{" not in r.read().decode()
    finally:
        stop.set()
        thread.join(timeout=15)
        sock_dir.cleanup()
        metrics.register(registered)
        audit.reset()
    assert result == [0]
