"""Probe and metrics endpoints over real HTTP: check results, verbose and exclude,
single-check paths, prometheus exposition, extra handlers, address parsing."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Counter

from pkg.server.server import Server, parse_address


def get(url: str, accept: str | None = None) -> tuple[int, str, str]:
    req = urllib.request.Request(url)
    if accept:
        req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def srv(registry: CollectorRegistry) -> Iterator[Server]:
    s = Server("127.0.0.1:0", registry=registry)
    s.start()
    yield s
    s.stop()


def test_healthy_by_default(srv: Server) -> None:
    assert get(srv.url + "/healthz")[0::2] == (200, "ok")
    assert get(srv.url + "/readyz")[0::2] == (200, "ok")
    status, _, body = get(srv.url + "/healthz?verbose")
    assert status == 200 and body == "[+]ping ok\nhealthz check passed\n"
    assert get(srv.url + "/nope")[0] == 404


def test_failing_readiness_check(srv: Server) -> None:
    state = {"synced": False}

    def informers_synced() -> str | None:
        return None if state["synced"] else "caches not synced"

    def broken() -> None:
        raise RuntimeError("webhook not ready")

    srv.add_readyz_check("informers", informers_synced)
    srv.add_readyz_check("webhook", broken)
    status, _, body = get(srv.url + "/readyz")
    assert status == 500
    assert "[-]informers failed: reason withheld" in body and body.endswith(
        "readyz check failed\n")
    status, _, body = get(srv.url + "/readyz?verbose")
    assert "[-]informers failed: caches not synced" in body
    assert "[-]webhook failed: webhook not ready" in body
    assert get(srv.url + "/readyz/webhook")[0::2] == (
        500, "internal server error: webhook not ready\n")
    assert get(srv.url + "/readyz/ping")[0::2] == (200, "ok")
    assert get(srv.url + "/readyz/unknown")[0] == 404
    state["synced"] = True
    assert get(srv.url + "/readyz?exclude=webhook")[0] == 200
    assert get(srv.url + "/healthz")[0] == 200, "readiness checks do not affect health"
    with pytest.raises(ValueError):
        srv.add_readyz_check("webhook", broken)


def test_metrics_exposition(srv: Server, registry: CollectorRegistry) -> None:
    c = Counter("koordlet_test_total", "A test counter", registry=registry)
    c.inc(3)
    status, ctype, body = get(srv.url + "/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    assert "koordlet_test_total 3.0" in body
    status, ctype, body = get(srv.url + "/metrics",
                              accept="application/openmetrics-text; version=1.0.0")
    assert ctype.startswith("application/openmetrics-text") and body.endswith("# EOF\n")


def test_extra_paths_and_split_servers(registry: CollectorRegistry) -> None:
    other = CollectorRegistry()
    Counter("external_total", "x", registry=other).inc()
    with Server("127.0.0.1:0", registry=registry, health=False) as metrics:
        metrics.add_metrics_path("/external-metrics", other)
        metrics.add_handler("/configz", lambda q: (200, "application/json", b'{"a":1}'))
        assert get(metrics.url + "/healthz")[0] == 404
        assert "external_total 1.0" in get(metrics.url + "/external-metrics")[2]
        assert get(metrics.url + "/configz")[2] == '{"a":1}'
    with Server("127.0.0.1:0", registry=registry, metrics=False) as probes:
        assert get(probes.url + "/metrics")[0] == 404
        assert get(probes.url + "/healthz")[0] == 200


def test_parse_address() -> None:
    assert parse_address(":8080") == ("0.0.0.0", 8080)
    assert parse_address("0.0.0.0:10251") == ("0.0.0.0", 10251)
    assert parse_address("127.0.0.1") == ("127.0.0.1", 0)
    assert parse_address("[::1]:9316") == ("::1", 9316)
    with pytest.raises(ValueError):
        parse_address(":http")
    with pytest.raises(ValueError):
        parse_address(":70000")


def test_subtree_handler_gets_the_rest_of_the_path(srv: Server) -> None:
    srv.add_handler("/debug/pods", lambda q: (200, "text/plain", q["__subpath__"][0].encode()),
                    subtree=True)
    assert get(srv.url + "/debug/pods/default/web-1")[::2] == (200, "default/web-1")
    assert get(srv.url + "/debug/other")[0] == 404
