"""Starts and stops the local cluster's processes: the embedded API server with the simulated
kubelets, koord-manager, koord-scheduler and one koordlet per simulated node (``hack/local-up``;
upstream deploys the same components with its Helm chart).

Each component is ``python -m <component>.main`` with upstream's flags, its log in
``<workdir>/logs/<name>.log``. Ports are free ones on 127.0.0.1. The webhook server is reached
by URL (``WEBHOOK_HOST``), as for a manager outside the cluster. ``stop`` sends SIGTERM to all
(koordlets first, the API server last) and kills what has not exited after a grace period.
"""

from __future__ import annotations

import json
import logging
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from koordlet.metricsadvisor.simulated import ANNOTATION_SYSTEM_USAGE
from pkg.util.testdata import upstream_data_dir
from test.e2e.cluster import ComponentProcess, free_port, http_ok, wait_for

from .scenario import Scenario

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 10.0
APISERVER = "kube-apiserver"


class ComponentFailed(RuntimeError):
    """A component exited or did not get ready; the message has its log's tail."""


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def scheduler_config_text() -> str:
    """The KubeSchedulerConfiguration upstream ships (the ``koord-scheduler-config`` key of
    ``config/manager/scheduler-config.yaml``), unchanged."""
    cm = yaml.safe_load((upstream_data_dir() / "config/manager/scheduler-config.yaml")
                        .read_text())
    return cm["data"]["koord-scheduler-config"]


def node_specs(scenario: Scenario) -> list[dict[str, object]]:
    """The simulated nodes (``test.apiserver --simulated-nodes``) of a scenario."""
    pool = scenario.nodes
    sys_usage = {"cpu": pool.system_usage.cpu, "memory": pool.system_usage.memory}
    return [{"name": f"node-{i}", "cpu": pool.cpu, "memory": pool.memory, "pods": pool.pods,
             "labels": {"topology.kubernetes.io/zone": f"zone-{i % 3}"},
             "annotations": {ANNOTATION_SYSTEM_USAGE: json.dumps(sys_usage)}}
            for i in range(pool.count)]


@dataclass
class Components:
    """The running processes of one local cluster."""

    workdir: Path
    scenario: Scenario
    kubeconfig: Path = field(init=False)
    apiserver_url: str = ""
    scheduler_url: str = ""
    manager_probes_url: str = ""
    koordlet_metrics: dict[str, str] = field(default_factory=dict)
    processes: dict[str, ComponentProcess] = field(default_factory=dict)
    _sock_dir: tempfile.TemporaryDirectory[str] | None = None

    def __post_init__(self) -> None:
        self.kubeconfig = self.workdir / "kubeconfig"
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)

    def log_path(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def _start(self, name: str, module: str, args: list[str],
               env: dict[str, str] | None = None) -> ComponentProcess:
        proc = ComponentProcess(module, args, self.log_path(name), env, own_session=True)
        self.processes[name] = proc
        return proc

    def _wait(self, name: str, ready, timeout: float, what: str) -> None:
        proc = self.processes[name]

        def check() -> bool:
            if not proc.alive():
                raise ComponentFailed(f"{name} exited with {proc.proc.returncode} before "
                                      f"{what}; {self.log_path(name)}:\n{_tail(proc.log_path)}")
            return bool(ready())

        try:
            wait_for(check, timeout=timeout, interval=0.1, what=f"{name}: {what}")
        except AssertionError as e:
            raise ComponentFailed(f"{e}; {self.log_path(name)}:\n{_tail(proc.log_path)}") \
                from None

    # -- the API server and its simulated kubelets --------------------------------------------

    def start_apiserver(self) -> None:
        nodes_file = self.workdir / "nodes.yaml"
        nodes_file.write_text(yaml.safe_dump(node_specs(self.scenario)))
        proc = self._start(APISERVER, "test.apiserver", [
            "--port", "0", "--kubeconfig-out", str(self.kubeconfig), "--random-token",
            "--workdir", str(self.workdir / "apiserver"), "--simulated-nodes", str(nodes_file)])

        def ready() -> bool:
            for line in proc.log().splitlines():
                if line.startswith("READY "):
                    self.apiserver_url = line.split()[1]
                    return True
            return False

        self._wait(APISERVER, ready, 30, "READY")

    # -- koord-manager ------------------------------------------------------------------------

    def start_manager(self) -> None:
        probes, metrics, webhook = free_port(), free_port(), free_port()
        self.manager_probes_url = f"http://127.0.0.1:{probes}"
        self._start("koord-manager", "manager.main", [
            "--kubeconfig", str(self.kubeconfig), "--metrics-addr", f"127.0.0.1:{metrics}",
            "--health-probe-addr", f"127.0.0.1:{probes}", "-v", "2"],
            env={"WEBHOOK_HOST": "127.0.0.1", "WEBHOOK_PORT": str(webhook),
                 "WEBHOOK_CERT_DIR": str(self.workdir / "manager-certs")})
        self._wait("koord-manager", lambda: "controllers started:" in
                   self.processes["koord-manager"].log(), 60, "controllers started")

    # -- koord-scheduler ----------------------------------------------------------------------

    def start_scheduler(self) -> None:
        config = self.workdir / "koord-scheduler-config.yaml"
        config.write_text(scheduler_config_text())
        port = free_port()
        self.scheduler_url = f"http://127.0.0.1:{port}"
        self._start("koord-scheduler", "scheduler.main", [
            "--config", str(config), "--kubeconfig", str(self.kubeconfig),
            "--bind-address", "127.0.0.1", "--port", str(port)])
        self._wait("koord-scheduler", lambda: http_ok(self.scheduler_url + "/healthz"), 60,
                   "/healthz")

    # -- koordlets ----------------------------------------------------------------------------

    def start_koordlets(self, nodes: list[str]) -> None:
        # Unix socket paths are limited to 107 bytes: the hook sockets go in a short temp dir.
        self._sock_dir = tempfile.TemporaryDirectory(prefix="koord-local-", dir="/tmp")
        for node in nodes:
            port = free_port()
            self.koordlet_metrics[node] = f"http://127.0.0.1:{port}"
            node_dir = self.workdir / "nodes" / node
            self._start(f"koordlet-{node}", "koordlet.main", [
                "--kubeconfig", str(self.kubeconfig), f"--addr=127.0.0.1:{port}",
                "--simulate-metrics", f"--cgroup-root-dir={node_dir}/cgroup",
                f"--runtime-hooks-addr={self._sock_dir.name}/{node}.sock",
                f"--runtime-hooks-config-path={node_dir}/hookserver.d",
                *self.scenario.koordlet_args], env={"NODE_NAME": node})
        for node in nodes:
            url = self.koordlet_metrics[node]
            self._wait(f"koordlet-{node}", lambda u=url: http_ok(u + "/metrics"), 120, "/metrics")

    # -- all ----------------------------------------------------------------------------------

    def dead(self) -> list[str]:
        """Components that exited."""
        return [name for name, p in self.processes.items() if not p.alive()]

    def _stop_all(self, names: list[str]) -> None:
        """SIGTERM to all at once, then each gets what is left of one grace period."""
        procs = {n: self.processes[n] for n in names}
        for proc in procs.values():
            proc.terminate()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for name, proc in procs.items():
            if proc.stop(max(0.1, deadline - time.monotonic())):
                log.warning("%s did not stop in %gs: killed", name, STOP_GRACE_SECONDS)

    def stop_controllers(self) -> None:
        """Every component but the API server (its objects stay readable)."""
        self._stop_all([n for n in self.processes if n != APISERVER])

    def stop(self) -> None:
        """Every process, the API server last."""
        self.stop_controllers()
        if APISERVER in self.processes:
            self._stop_all([APISERVER])
        if self._sock_dir is not None:
            self._sock_dir.cleanup()
            self._sock_dir = None
