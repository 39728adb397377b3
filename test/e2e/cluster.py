"""Helpers for the end-to-end suites: an embedded API server with Koordinator's CRDs or with
what the Helm chart installs (``install_chart``: CRDs, RBAC, ConfigMaps, PriorityClasses,
webhook configurations), kubeconfigs of the chart's ServiceAccounts, and components started as
real processes (``python -m <component>.main``) with their logs kept.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from api.crds import crd_manifests
from hack.helm.render import render_objects
from manager.webhook.configuration import VALIDATING_WEBHOOKS
from manager.webhook.options import DEFAULT_MUTATING_NAME, DEFAULT_VALIDATING_NAME
from pkg.client import ApiError
from pkg.client.errors import is_not_found
from pkg.client.resources import (
    CUSTOM_RESOURCE_DEFINITIONS,
    ENDPOINTS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    for_object,
)
from pkg.client.rest import Client
from test.apiserver import kubeconfig

REPO_ROOT = Path(__file__).absolute().parents[2]
CHART_DIR = REPO_ROOT / "charts" / "koordinator"
CHART_NAMESPACE = "koordinator-system"
# The components run here as processes, not as the chart's Deployments and DaemonSets.
WORKLOAD_KINDS = frozenset({"Deployment", "DaemonSet"})
# The ServiceAccount each component runs under (the chart's rbac/*.yaml).
SERVICE_ACCOUNTS = {"koord-manager": "koord-manager", "koord-scheduler": "koord-scheduler",
                    "koord-descheduler": "koord-descheduler", "koordlet": "koordlet"}


def chart_objects(values_files: Sequence[Path] = (), set_values: Sequence[str] = ()
                  ) -> list[dict[str, Any]]:
    """charts/koordinator rendered (hack/helm) for ``koordinator-system``, in install order."""
    return render_objects(CHART_DIR, values_files, set_values, namespace=CHART_NAMESPACE)


def install_chart(client: Client, objects: Sequence[dict[str, Any]] | None = None,
                  skip: Callable[[dict[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
    """Create what ``helm install`` would (``objects``, by default the chart with its default
    values) except the workloads and what ``skip`` refuses, in Helm's install order; an object
    that exists (a second run against the same server) is replaced. Returns what it applied."""
    applied = []
    for obj in chart_objects() if objects is None else objects:
        if obj.get("kind") in WORKLOAD_KINDS or (skip is not None and skip(obj)):
            continue
        resource = for_object(obj)
        ns = obj["metadata"].get("namespace") if resource.namespaced else None
        try:
            client.create(resource, obj, ns)
        except ApiError as e:
            if e.status != 409:
                raise
            current = client.get(resource, obj["metadata"]["name"], ns)
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion":
                                       current["metadata"]["resourceVersion"]}}
            client.update(resource, obj, ns)
        applied.append(obj)
    return applied


PROFILE_HOOK = "vclustercolocationprofile.koordinator.sh"


def chart_webhooks(client: Client) -> list[dict[str, Any]] | None:
    """Every hook of the chart's two webhook configurations, as stored; None while either is
    missing or empty (what a caller waits on before relying on koord-manager's webhooks)."""
    hooks: list[dict[str, Any]] = []
    for resource, name in ((MUTATING_WEBHOOK_CONFIGURATIONS, DEFAULT_MUTATING_NAME),
                           (VALIDATING_WEBHOOK_CONFIGURATIONS, DEFAULT_VALIDATING_NAME)):
        try:
            found = client.get(resource, name).get("webhooks") or []
        except ApiError:  # not created yet
            return None
        if not found:
            return None
        hooks += found
    return hooks


def with_profile_hook(config: dict[str, Any], name: str = PROFILE_HOOK) -> dict[str, Any]:
    """The chart's ValidatingWebhookConfiguration, which (as upstream's) has no
    ClusterColocationProfile hook (nor ``name``, another hook beyond upstream's), with
    koord-manager's own definition of it added as a user would register it: served through the
    chart's Service like the others (koord-manager keeps the configurations' hooks as
    installed, so an unregistered one is never called)."""
    hooks = config.get("webhooks") or []
    if any(h["name"] == name for h in hooks):
        return config
    [hook] = [h for h in VALIDATING_WEBHOOKS if h["name"] == name]
    client_config = hooks[0]["clientConfig"]
    hook = {**hook, "clientConfig": {**client_config, "service": {
        **client_config["service"], "path": hook["clientConfig"]["service"]["path"]}}}
    return {**config, "webhooks": [*hooks, hook]}


def service_account_kubeconfig(admin_kubeconfig: str, component: str, workdir: Path) -> str:
    """A kubeconfig at ``workdir/<component>.kubeconfig`` that authenticates as the chart's
    ServiceAccount of ``component`` (a TokenRequest through the admin kubeconfig)."""
    return kubeconfig.for_service_account(
        admin_kubeconfig, CHART_NAMESPACE, SERVICE_ACCOUNTS[component],
        str(workdir / f"{component}.kubeconfig"))


def install_crds(client: Client) -> None:
    for crd in crd_manifests():
        client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)


def install_webhook_prerequisites(client: Client, namespace: str) -> None:
    """What koord-manager's webhooks need of a fresh API server: Koordinator's CRDs, their
    ``namespace`` and the ``koord-batch`` PriorityClass (as upstream's
    ``config/manager/koord-batch.yaml``)."""
    install_crds(client)
    client.create(NAMESPACES, {"metadata": {"name": namespace}})
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass", "metadata": {"name": "koord-batch"},
                                     "value": 5000, "preemptionPolicy": "PreemptLowerPriority"})


def route_service(client: Client, namespace: str, name: str, port: int) -> None:
    """Service ``namespace/name`` (port 443) with Endpoints ``127.0.0.1:port``: the API server
    reaches a webhook server on this machine as it would a Pod's in a cluster."""
    client.create(SERVICES, {"metadata": {"name": name, "namespace": namespace},
                             "spec": {"ports": [{"port": 443, "targetPort": port}]}}, namespace)
    client.create(ENDPOINTS, {"metadata": {"name": name, "namespace": namespace},
                              "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                                           "ports": [{"port": port}]}]}, namespace)


# Ports handed out by this process (a component binds its port a moment later).
_HANDED_OUT: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A loopback port free now, for a component to listen on. Chosen below the kernel's
    ephemeral range: a port from bind(0) is an ephemeral one, which any outgoing connection may
    take before the component binds it ("Address already in use" at start-up, seen in CI)."""
    low, _ = _ephemeral_range()
    while True:
        port = random.randrange(max(1024, low - 12000), low)
        if port in _HANDED_OUT:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _HANDED_OUT.add(port)
        return port


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.1,
             what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


_PR_SET_PDEATHSIG = 1


def _own_session() -> None:
    """In the child before exec: a new session, and SIGTERM when the parent dies."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's stop() still ends it


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """Whether a GET of ``url`` answers 200 (a probe, /metrics); False when nothing listens."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def scrape_gauge(url: str, name: str, timeout: float = 2.0) -> float | None:
    """The first sample of ``name`` on a Prometheus text endpoint (None: absent or down)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


class ComponentProcess:
    """A component's ``main`` module run as its own process, logging to a file."""

    def __init__(self, module: str, args: list[str], log_path: Path,
                 env: dict[str, str] | None = None, own_session: bool = False,
                 append: bool = False) -> None:
        """``env`` adds to (or overrides) this process's environment. ``own_session`` puts the
        process in a session of its own (a terminal's Ctrl-C reaches only the parent, which
        stops it in order) and has the kernel SIGTERM it when the parent dies. ``append``
        keeps what ``log_path`` holds (a restart of the same component)."""
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep +
                   os.environ.get("PYTHONPATH", ""), **(env or {}))
        self.log_path = log_path
        self._log = open(log_path, "a" if append else "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO_ROOT,
                                     env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=_own_session if own_session else None)

    def log(self) -> str:
        return self.log_path.read_text()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self) -> None:
        """SIGTERM without waiting (to stop many processes at once, then ``stop`` each)."""
        if self.proc.poll() is None:
            self.proc.terminate()

    def stop(self, grace: float = 15.0) -> bool:
        """SIGTERM, SIGKILL after ``grace`` seconds; True when it had to be killed."""
        killed = False
        self.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            killed = True
        self._log.close()
        return killed


def start_scheduler(kubeconfig: str, config: str, workdir: Path, name: str = "sched",
                    extra: list[str] | None = None) -> tuple[ComponentProcess, str]:
    """koord-scheduler with ``config`` as ``kubeconfig`` says (the koord-scheduler
    ServiceAccount's, see ``service_account_kubeconfig``); returns the process and its
    debug/health URL."""
    cfg = workdir / f"{name}-config.yaml"
    cfg.write_text(config)
    port = free_port()
    proc = ComponentProcess("scheduler.main", [
        "--config", str(cfg), "--kubeconfig", kubeconfig, "--bind-address", "127.0.0.1",
        "--port", str(port), *(extra or [])], workdir / f"{name}.log")
    return proc, f"http://127.0.0.1:{port}"


@contextmanager
def running_scheduler(kubeconfig: str, config: str, workdir: Path,
                      deadline: float = 60.0, extra: list[str] | None = None) -> Iterator[str]:
    """``start_scheduler`` (``extra``: more flags), healthy before the block runs and stopped
    after it; yields the debug/health URL."""
    proc, url = start_scheduler(kubeconfig, config, workdir, extra=extra)
    try:
        wait_for(lambda: http_ok(url + "/healthz"), deadline,
                 what=f"koord-scheduler healthy; log:\n{proc.log()}")
        yield url
    finally:
        proc.stop()


def start_descheduler(kubeconfig: str, config: Mapping[str, Any], workdir: Path,
                      name: str = "desched", extra: list[str] | None = None
                      ) -> tuple[ComponentProcess, str]:
    """koord-descheduler with the DeschedulerConfiguration ``config`` (its bind addresses set
    to a free loopback port) as ``kubeconfig`` says; returns the process and its health URL."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    cfg = workdir / f"{name}-config.yaml"
    cfg.write_text(json.dumps({**config, "healthzBindAddress": address,
                               "metricsBindAddress": address}))
    proc = ComponentProcess("descheduler.main", [
        "--config", str(cfg), "--kubeconfig", kubeconfig, *(extra or [])],
        workdir / f"{name}.log")
    return proc, f"http://{address}"


def guaranteed_pod(name: str, *, scheduler: str = "koord-scheduler", cpu: str = "100m",
                   memory: str = "128Mi", labels: Mapping[str, str] | None = None,
                   annotations: Mapping[str, str] | None = None,
                   priority_class: str = "") -> dict[str, Any]:
    """A one-container pod in ``default`` whose limits equal its requests, gone at once when
    deleted (terminationGracePeriodSeconds 0)."""
    requests = {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {"schedulerName": scheduler, "terminationGracePeriodSeconds": 0,
                            "containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": requests,
                                                          "limits": dict(requests)}}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": dict(labels or {}),
                         "annotations": dict(annotations or {})},
            "spec": spec}


def node_of(client: Client, name: str) -> str:
    """The node pod ``default/name`` is bound to; "" when unbound or gone."""
    try:
        return str((client.get(PODS, name, "default").get("spec") or {}).get("nodeName") or "")
    except ApiError as err:
        if is_not_found(err):
            return ""
        raise


def unschedulable_message(client: Client, name: str) -> str:
    """The message of pod ``default/name``'s PodScheduled=False condition, "" if none."""
    pod = client.get(PODS, name, "default")
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or "")
    return ""


def bound(client: Client, names: Sequence[str]) -> list[str]:
    """The pods of ``names`` (in ``default``) bound to a node."""
    return [n for n in names if node_of(client, n)]
