"""Starts and stops the local cluster's processes: the embedded API server with the simulated
kubelets, two replicas each of koord-manager, koord-scheduler and koord-descheduler (as
upstream's Helm chart runs them) and one koordlet per simulated node (``hack/local-up``;
upstream deploys the same components with its Helm chart, whose objects but the workloads
``bootstrap.py`` installs).

Each component runs as the chart's ServiceAccount of its Deployment or DaemonSet
(``koord-manager``, ``koord-scheduler``, ``koord-descheduler``, ``koordlet`` in
``koordinator-system``): its ``--kubeconfig`` (``<workdir>/<component>.kubeconfig``) carries a
TokenRequest token of that ServiceAccount, so the API server's RBAC applies the chart's
ClusterRoles to it as in a cluster; the admin kubeconfig (``<workdir>/kubeconfig``) is the
user's. koord-scheduler's ``--config`` is the chart's ``koord-scheduler-config``;
koord-descheduler's is the chart's ``koord-descheduler-config`` with each replica's
``healthzBindAddress``/``metricsBindAddress`` on a free loopback port instead of the chart's
``0.0.0.0:10251``.

Each component is ``python -m <component>.main`` with upstream's flags, its log in
``<workdir>/logs/<name>.log``; replicas are ``koord-manager-0``/``-1``,
``koord-scheduler-0``/``-1`` and ``koord-descheduler-0``/``-1``, each with its own ports
(metrics, probes, webhook) and webhook cert dir. Ports are free ones on 127.0.0.1; the webhook
server listens on 127.0.0.1 only (``--webhook-bind-address``) and is reached by URL
(``WEBHOOK_HOST``), as for a manager outside the cluster. Both replicas campaign for their Lease
(``koordinator-system/koordinator-manager``, ``koordinator-system/koord-scheduler``,
``koordinator-system/koord-descheduler``) with shorter periods than upstream's 15 s / 10 s / 2 s
(``LEASE_FLAGS``: 8 s lease, 6 s renew deadline, 1 s retry), so a standby takes over a killed
leader within about 10 s. Once a component got ready the supervisor (``supervisor.py``) restarts
it whenever it exits. ``stop`` sends SIGTERM to all (koordlets first, the API server last) and
kills what has not exited after a grace period.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from koordlet.metricsadvisor.simulated import ANNOTATION_SYSTEM_USAGE
from pkg.client import ApiError
from pkg.client.resources import LEASES as LEASES_RESOURCE
from pkg.client.rest import Client
from test.e2e.cluster import free_port, http_ok, service_account_kubeconfig, wait_for

from .scenario import Scenario
from .supervisor import Restart, Supervised, Supervisor

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


def node_specs(scenario: Scenario) -> list[dict[str, object]]:
    """The simulated nodes (``test.apiserver --simulated-nodes``) of a scenario."""
    pool = scenario.nodes
    sys_usage = {"cpu": pool.system_usage.cpu, "memory": pool.system_usage.memory}
    return [{"name": f"node-{i}", "cpu": pool.cpu, "memory": pool.memory, "pods": pool.pods,
             "labels": {"topology.kubernetes.io/zone": f"zone-{i % 3}"},
             "annotations": {ANNOTATION_SYSTEM_USAGE: json.dumps(sys_usage)}}
            for i in range(pool.count)]


REPLICAS = 2
MANAGER, SCHEDULER, KOORDLET = "koord-manager", "koord-scheduler", "koordlet"
DESCHEDULER = "koord-descheduler"
# Leader election on a local cluster: a standby takes over within a lease (upstream: 15 s, 10 s,
# 2 s), long enough that a loaded 2-core machine does not lose leases spuriously.
LEASE_FLAGS = ["--leader-elect-lease-duration", "8s", "--leader-elect-renew-deadline", "6s",
               "--leader-elect-retry-period", "1s"]
LEASE_NAMESPACE = "koordinator-system"
LEASES = {MANAGER: "koordinator-manager", SCHEDULER: "koord-scheduler",
          DESCHEDULER: "koord-descheduler"}
# pkg.component's runner logs "attempting to acquire leader lease <ns/name> (identity <id>)":
# every replica's identities (one per start), to tell which replica holds a Lease.
_IDENTITY = re.compile(r"attempting to acquire leader lease \S+ \(identity (\S+)\)")


def replica_names(component: str) -> list[str]:
    return [f"{component}-{i}" for i in range(REPLICAS)]


@dataclass
class Components:
    """The running processes of one local cluster."""

    workdir: Path
    scenario: Scenario
    on_restart: Callable[[Restart], None] | None = None
    kubeconfig: Path = field(init=False)
    apiserver_url: str = ""
    scheduler_urls: dict[str, str] = field(default_factory=dict)
    descheduler_urls: dict[str, str] = field(default_factory=dict)
    manager_probes_urls: dict[str, str] = field(default_factory=dict)
    koordlet_metrics: dict[str, str] = field(default_factory=dict)
    supervisor: Supervisor = field(init=False)
    _sock_dir: tempfile.TemporaryDirectory[str] | None = None

    def __post_init__(self) -> None:
        self.kubeconfig = self.workdir / "kubeconfig"
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        self.supervisor = Supervisor(self.on_restart)

    @property
    def processes(self) -> dict[str, Supervised]:
        return self.supervisor.processes

    def log_path(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def kubeconfig_of(self, component: str) -> str:
        """The kubeconfig of ``component``'s ServiceAccount (MANAGER, SCHEDULER, DESCHEDULER or
        KOORDLET),
        requested once through the admin kubeconfig; the API server must be up."""
        path = self.workdir / f"{component}.kubeconfig"
        if path.exists():
            return str(path)
        return service_account_kubeconfig(str(self.kubeconfig), component, self.workdir)

    def _start(self, name: str, module: str, args: list[str],
               env: dict[str, str] | None = None) -> Supervised:
        return self.supervisor.start(name, module, args, self.log_path(name), env)

    def _wait(self, name: str, ready: Callable[[], object], timeout: float, what: str) -> None:
        """Wait for the first start to get ready, then supervise it (restarts on exit)."""
        proc = self.processes[name]

        def check() -> bool:
            if not proc.alive():
                raise ComponentFailed(f"{name} exited with {proc.proc.proc.returncode} before "
                                      f"{what}; {self.log_path(name)}:\n{_tail(proc.log_path)}")
            return bool(ready())

        try:
            wait_for(check, timeout=timeout, interval=0.1, what=f"{name}: {what}")
        except AssertionError as e:
            raise ComponentFailed(f"{e}; {self.log_path(name)}:\n{_tail(proc.log_path)}") \
                from None
        self.supervisor.supervise(name)

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
        """Both replicas; returns once each serves its webhooks and one leads."""
        for name in replica_names(MANAGER):
            probes, metrics, webhook = free_port(), free_port(), free_port()
            self.manager_probes_urls[name] = f"http://127.0.0.1:{probes}"
            self._start(name, "manager.main", [
                "--kubeconfig", self.kubeconfig_of(MANAGER),
                "--metrics-addr", f"127.0.0.1:{metrics}",
                "--health-probe-addr", f"127.0.0.1:{probes}", "--webhook-bind-address",
                "127.0.0.1", *LEASE_FLAGS, "-v", "2"],
                env={"WEBHOOK_HOST": "127.0.0.1", "WEBHOOK_PORT": str(webhook),
                     "WEBHOOK_CERT_DIR": str(self.workdir / f"{name}-certs")})
        for name, url in self.manager_probes_urls.items():
            self._wait(name, partial(http_ok, url + "/readyz"), 60, "/readyz")
        wait_for(lambda: any("controllers started:" in self.processes[n].log()
                             for n in replica_names(MANAGER)),
                 timeout=60, what="a koord-manager replica leading (controllers started)")

    # -- koord-scheduler ----------------------------------------------------------------------

    def start_scheduler(self, config_text: str) -> None:
        """Both replicas with ``config_text`` (the chart's KubeSchedulerConfiguration) as
        ``--config``; returns once each serves /healthz."""
        config = self.workdir / "koord-scheduler-config.yaml"
        config.write_text(config_text)
        for name in replica_names(SCHEDULER):
            port = free_port()
            self.scheduler_urls[name] = f"http://127.0.0.1:{port}"
            self._start(name, "scheduler.main", [
                "--config", str(config), "--kubeconfig", self.kubeconfig_of(SCHEDULER),
                "--bind-address", "127.0.0.1", "--port", str(port), *LEASE_FLAGS])
        for name, url in self.scheduler_urls.items():
            self._wait(name, partial(http_ok, url + "/healthz"), 60, "/healthz")

    # -- koord-descheduler --------------------------------------------------------------------

    def start_descheduler(self, config: Mapping[str, Any]) -> None:
        """Both replicas with ``config`` (the chart's DeschedulerConfiguration), each serving
        /healthz and /metrics on its own loopback port; returns once each serves /healthz."""
        for name in replica_names(DESCHEDULER):
            address = f"127.0.0.1:{free_port()}"
            self.descheduler_urls[name] = f"http://{address}"
            path = self.workdir / f"{name}-config.yaml"
            path.write_text(yaml.safe_dump({**config, "healthzBindAddress": address,
                                            "metricsBindAddress": address}, sort_keys=False))
            self._start(name, "descheduler.main", [
                "--config", str(path), "--kubeconfig", self.kubeconfig_of(DESCHEDULER),
                *LEASE_FLAGS])
        for name, url in self.descheduler_urls.items():
            self._wait(name, partial(http_ok, url + "/healthz"), 60, "/healthz")

    # -- koordlets ----------------------------------------------------------------------------

    def start_koordlets(self, nodes: list[str]) -> None:
        # Unix socket paths are limited to 107 bytes: the hook sockets go in a short temp dir.
        self._sock_dir = tempfile.TemporaryDirectory(prefix="koord-local-", dir="/tmp")
        for node in nodes:
            port = free_port()
            self.koordlet_metrics[node] = f"http://127.0.0.1:{port}"
            node_dir = self.workdir / "nodes" / node
            self._start(f"koordlet-{node}", "koordlet.main", [
                "--kubeconfig", self.kubeconfig_of(KOORDLET), f"--addr=127.0.0.1:{port}",
                "--simulate-metrics", f"--cgroup-root-dir={node_dir}/cgroup",
                f"--runtime-hooks-addr={self._sock_dir.name}/{node}.sock",
                f"--runtime-hooks-config-path={node_dir}/hookserver.d",
                *self.scenario.koordlet_args], env={"NODE_NAME": node})
        for node in nodes:
            url = self.koordlet_metrics[node]
            self._wait(f"koordlet-{node}", partial(http_ok, url + "/metrics"), 120, "/metrics")

    # -- leaders ------------------------------------------------------------------------------

    def replica_of(self, identity: str) -> str:
        """The replica whose log announced ``identity`` ("" when none did)."""
        for name in (replica_names(MANAGER) + replica_names(SCHEDULER)
                     + replica_names(DESCHEDULER)):
            if name in self.processes and identity in _IDENTITY.findall(
                    self.processes[name].log()):
                return name
        return ""

    def lease(self, client: Client, component: str) -> tuple[str, str, int]:
        """(holder identity, its replica, lease transitions) of ``component``'s Lease (MANAGER,
        SCHEDULER or DESCHEDULER); ("", "", 0) while there is none."""
        try:
            lease = client.get(LEASES_RESOURCE, LEASES[component], LEASE_NAMESPACE)
        except ApiError:
            return "", "", 0
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        return (holder, self.replica_of(holder) if holder else "",
                int(spec.get("leaseTransitions") or 0))

    def leader(self, client: Client, component: str) -> str:
        """The replica of ``component`` holding its Lease, "" if none."""
        return self.lease(client, component)[1]

    # -- all ----------------------------------------------------------------------------------

    def _stop_all(self, names: list[str]) -> None:
        """SIGTERM to all at once, then each gets what is left of one grace period."""
        procs = {s.name: s.proc for s in self.supervisor.release(names)}
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
        self.supervisor.close()
        if self._sock_dir is not None:
            self._sock_dir.cleanup()
            self._sock_dir = None
