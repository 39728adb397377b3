"""Fixtures the e2e suites share: the embedded API server with authentication and RBAC on, the
Helm chart installed (``install_chart``: its CRDs, Namespace, RBAC, ConfigMaps, ...), and the
chart's ServiceAccount kubeconfigs the components run under; the test's own ``client`` is the
admin (the user). After each test no component may have been denied anything: the server's
``apiserver_authorization_denied_total`` must hold no row for a ServiceAccount of the chart's
namespace, or the test fails naming the (user, verb, group, resource) rows.

A suite narrows what is installed by overriding ``chart_skip`` (or, without koord-manager,
with the ``without_webhooks`` marker) (RBAC always comes from the
chart), and a test that provokes denials on purpose overrides ``expected_denials``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

from pkg.client.rest import Client
from test.apiserver import ServerHandle, rbac, start
from test.apiserver.rbac import Denial
from test.e2e.cluster import (
    CHART_NAMESPACE,
    ComponentProcess,
    free_port,
    install_chart,
    scrape_gauge,
    service_account_kubeconfig,
)

WEBHOOK_SERVICE = "koordinator-webhook-service"
COMPONENT_USER_PREFIX = f"system:serviceaccount:{CHART_NAMESPACE}:"
# What install_chart leaves out: given a chart object, True to skip it.
ChartSkip = Callable[[dict[str, Any]], bool]


def denials(srv: ServerHandle) -> list[Denial]:
    """Every (user, verb, group, resource) the server has answered 403 Forbidden, with counts."""
    return rbac.denials(srv.server.handlers.authorizer.denied.collect())


def component_denials(srv: ServerHandle) -> list[Denial]:
    """The denials of the chart's ServiceAccounts (the components)."""
    return [d for d in denials(srv) if d.user.startswith(COMPONENT_USER_PREFIX)]


def webhook_service(obj: dict[str, Any]) -> bool:
    """A ``chart_skip`` for suites that serve the webhooks from this machine: the chart's
    Service gives way to ``route_service``'s (Service and Endpoints to a local port)."""
    return obj.get("kind") == "Service" and obj["metadata"]["name"] == WEBHOOK_SERVICE


def webhook_configurations(obj: dict[str, Any]) -> bool:
    """A ``chart_skip`` for suites without koord-manager: its webhook configurations (and their
    Service) would send every pod create to a webhook server nobody runs."""
    return obj.get("kind") in ("MutatingWebhookConfiguration",
                               "ValidatingWebhookConfiguration") or webhook_service(obj)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{WITHOUT_WEBHOOKS}: the suite runs no koord-manager, so the chart's webhook "
                   "configurations are left out (see webhook_configurations)")


WITHOUT_WEBHOOKS = "without_webhooks"


@pytest.fixture
def chart_skip(request: pytest.FixtureRequest) -> ChartSkip | None:
    """What ``client`` leaves out of the chart (None: all of it but the workloads); a module
    marked ``pytestmark = pytest.mark.without_webhooks`` leaves out webhook_configurations."""
    if request.node.get_closest_marker(WITHOUT_WEBHOOKS) is not None:
        return webhook_configurations
    return None


@pytest.fixture
def expected_denials() -> frozenset[tuple[str, str, str, str]]:
    """(user, verb, group, resource) rows a test provokes on purpose."""
    return frozenset()


@contextmanager
def rbac_server(expected_denials: frozenset[tuple[str, str, str, str]] = frozenset()
                ) -> Iterator[ServerHandle]:
    """The API server with RBAC on; when the block ends without an error, fails unless every
    component denial is one of ``expected_denials``. (For module-scoped fixtures; tests use
    ``srv``.)"""
    s = start(random_token=True)
    try:
        yield s
        unexpected = [d for d in component_denials(s)
                      if (d.user, d.verb, d.group, d.resource) not in expected_denials]
        assert not unexpected, "components were denied by the chart's RBAC:\n" + "\n".join(
            f"  {d.user} {d.verb} {d.resource} (group {d.group!r}) x{d.count:g}"
            for d in unexpected)
    finally:
        s.stop()


@pytest.fixture
def srv(expected_denials: frozenset[tuple[str, str, str, str]]) -> Iterator[ServerHandle]:
    """The API server with RBAC on. Torn down after every fixture that started a component, so
    the check sees their last requests too."""
    with rbac_server(expected_denials) as s:
        yield s


@pytest.fixture
def client(srv: ServerHandle, chart_skip: ChartSkip | None) -> Iterator[Client]:
    """The admin's client, with the chart installed."""
    c = Client.from_kubeconfig(srv.kubeconfig)
    install_chart(c, skip=chart_skip)
    yield c
    c.close()


class KubeconfigOf(Protocol):
    """The ``kubeconfig_of`` fixture: the kubeconfig of a component's ServiceAccount."""

    def __call__(self, component: str) -> str: ...


@pytest.fixture
def kubeconfig_of(srv: ServerHandle, client: Client, tmp_path: Path) -> KubeconfigOf:
    """``kubeconfig_of("koord-manager")``: a kubeconfig (written once per test) that
    authenticates as that component's ServiceAccount of the chart."""
    made: dict[str, str] = {}

    def of(component: str) -> str:
        if component not in made:
            made[component] = service_account_kubeconfig(srv.kubeconfig, component, tmp_path)
        return made[component]

    return of


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="koordlet-e2e-", dir="/tmp") as d:
        yield Path(d)


class Koordlet:
    """``python -m koordlet.main`` for ``node`` under ``kubeconfig``, its hooks socket in
    ``sock_dir``, its log ``workdir/<node>.log``."""

    def __init__(self, kubeconfig: str, node: str, workdir: Path, sock_dir: Path,
                 *extra: str) -> None:
        port = free_port()
        self.metrics = f"http://127.0.0.1:{port}"
        self.proc = ComponentProcess("koordlet.main", [
            "--kubeconfig", kubeconfig, f"--addr=127.0.0.1:{port}",
            f"--runtime-hooks-addr={sock_dir}/{node}.sock",
            f"--runtime-hooks-config-path={workdir}/{node}-hooks", "--sys-root-dir=/sys/",
            "--collect-res-used-interval=1s", "-v", "2", *extra], workdir / f"{node}.log",
            env={"NODE_NAME": node})

    def metric(self, name: str) -> float | None:
        return scrape_gauge(self.metrics + "/metrics", name)


class Launch(Protocol):
    """The ``koordlets`` fixture: starts a koordlet for ``node`` with extra flags."""

    def __call__(self, node: str, *extra: str) -> Koordlet: ...


@pytest.fixture
def koordlets(kubeconfig_of: KubeconfigOf, tmp_path: Path, sock_dir: Path) -> Iterator[Launch]:
    """Starts koordlets under the chart's ``koordlet`` ServiceAccount; stops them after."""
    started: list[Koordlet] = []

    def launch(node: str, *extra: str) -> Koordlet:
        started.append(Koordlet(kubeconfig_of("koordlet"), node, tmp_path, sock_dir, *extra))
        return started[-1]

    yield launch
    for k in started:
        k.proc.stop()
