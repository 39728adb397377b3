"""koord-descheduler as a process: a bad ``--config`` stops start-up naming the file and the
field; a good one runs passes against the embedded API server under leader election, serving
/healthz and /metrics."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from descheduler.framework.testing import metrics, node, pod
from descheduler.main import COMPONENT, main
from pkg.client.resources import LEASES, NODE_METRICS, NODES, PODS
from pkg.client.rest import Client
from pkg.component import run
from test.apiserver.server import ServerHandle, start
from test.e2e.cluster import free_port, install_crds, wait_for

HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"


def run_main(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "koord-descheduler.config"
    path.write_text(text)
    code = main([f"--config={path}"])
    return code, capsys.readouterr().err.replace(str(path), "FILE")


def test_bad_config_stops_start_up_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_main(tmp_path, HEAD + "deschedulingIntervl: 10s\n", capsys)
    assert code == 1
    assert err.strip().endswith("koord-descheduler: FILE: deschedulingIntervl: unknown field")


def test_bad_args_stop_start_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_main(tmp_path, HEAD + "profiles:\n- pluginConfig:\n"
                         "  - name: MigrationController\n    args: {evictionPolicy: Kill}\n",
                         capsys)
    assert code == 1
    assert "FILE: profiles[0].pluginConfig[0].args.evictionPolicy: unsupported value 'Kill'" \
        in err


def test_unknown_plugin_stops_start_up(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run_main(tmp_path, HEAD + "profiles:\n- plugins:\n    balance:\n"
                         "      enabled: [{name: LowNodeLoadd}]\n", capsys)
    assert code == 1
    assert "LowNodeLoadd" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([f"--config={tmp_path / 'nope'}"]) == 1
    assert "nope: cannot read the file: No such file or directory" in capsys.readouterr().err


@pytest.fixture
def srv() -> Iterator[ServerHandle]:
    handle = start(pod_termination_delay=0.0)
    yield handle
    handle.stop()


def _seed(client: Client) -> None:
    """n1 hot (five pods of a ReplicaSet using 700m each of its 4 cpus), n2 idle."""
    nodes = [node("n1", cpu=4000, memory=8 * 2**30, pods=110),
             node("n2", cpu=4000, memory=8 * 2**30, pods=110)]
    pods = [pod(f"web-{i}", 700, 2**28, "n1") for i in range(5)]
    install_crds(client)
    for n in nodes:
        client.create(NODES, n)
    for p in pods:
        body = {k: v for k, v in p.items() if k != "status"}
        body["metadata"] = {k: v for k, v in p["metadata"].items() if k != "uid"}
        client.create(PODS, body, "default")
    stamp = time.time()
    for m in metrics(nodes, pods, update_time=stamp):
        client.create(NODE_METRICS, m)
        client.update_status(NODE_METRICS, client.get(NODE_METRICS, m["metadata"]["name"])
                             | {"status": m["status"]})


CONFIG = HEAD + """\
leaderElection: {{leaderElect: true, leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 1s,
                  resourceNamespace: default}}
healthzBindAddress: 127.0.0.1:{port}
metricsBindAddress: 127.0.0.1:{port}
deschedulingInterval: {interval}
dryRun: {dry_run}
profiles:
- name: koord-descheduler
  plugins:
    balance: {{enabled: [{{name: LowNodeLoad}}]}}
    evict: {{disabled: [{{name: "*"}}], enabled: [{{name: DefaultEvictor}}]}}
    filter: {{disabled: [{{name: "*"}}], enabled: [{{name: DefaultEvictor}}]}}
  pluginConfig:
  - name: LowNodeLoad
    args:
      lowThresholds: {{cpu: 30}}
      highThresholds: {{cpu: 60}}
      anomalyCondition: {{consecutiveAbnormalities: 1}}
"""


class Process:
    """koord-descheduler's ``run`` on a thread, stopped through ``stop``."""

    def __init__(self, srv: ServerHandle, config: Path) -> None:
        self.stop = threading.Event()
        self.status: int | None = None
        argv = [f"--config={config}", f"--kubeconfig={srv.kubeconfig}"]
        self.thread = threading.Thread(target=self._run, args=(argv,))
        self.thread.start()

    def _run(self, argv: list[str]) -> None:
        self.status = run(COMPONENT, argv, self.stop)

    def close(self) -> int | None:
        self.stop.set()
        self.thread.join(30)
        return self.status


def _terminating(client: Client) -> list[str]:
    """Pods on n1 evicted (gone or being deleted)."""
    names = {f"web-{i}" for i in range(5)}
    present = {p["metadata"]["name"] for p in client.list(PODS, "default")["items"]
               if not p["metadata"].get("deletionTimestamp")}
    return sorted(names - present)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - a test's own server
        body: bytes = resp.read()
        return body.decode()


def test_a_pass_evicts_from_the_hot_node_while_leading(srv: ServerHandle, tmp_path: Path) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig)
    _seed(client)
    port = free_port()
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(port=port, interval="0s", dry_run="false"))
    proc = Process(srv, config)
    try:
        # n1 at 87.5 % cpu, n2 idle: LowNodeLoad evicts until n1 is within 60 %.
        assert wait_for(lambda: len(_terminating(client)) >= 2, timeout=30)
        lease: dict[str, Any] = client.get(LEASES, "koord-descheduler", "default")
        assert lease["spec"]["holderIdentity"]
        assert _get(f"http://127.0.0.1:{port}/healthz") == "ok"
        assert ('descheduler_pods_evicted{namespace="default",node="n1",result="success",'
                'strategy="LowNodeLoad"}') in _get(f"http://127.0.0.1:{port}/metrics")
    finally:
        assert proc.close() == 0
    # The interval is 0: one pass, so nothing more was evicted after it.
    assert len(_terminating(client)) == 2


def test_dry_run_evicts_nothing(srv: ServerHandle, tmp_path: Path,
                                caplog: pytest.LogCaptureFixture) -> None:
    client = Client.from_kubeconfig(srv.kubeconfig)
    _seed(client)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG.format(port=free_port(), interval="1s", dry_run="true"))
    caplog.set_level("INFO")
    proc = Process(srv, config)
    try:
        assert wait_for(lambda: "dry run: would evict pod default/web-" in caplog.text,
                        timeout=30)
    finally:
        assert proc.close() == 0
    assert _terminating(client) == []
