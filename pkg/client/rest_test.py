"""The JSON client against the embedded API server: verbs, errors, pagination, watch, typed
CRDs, rate limiting and authentication."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.crds import crd_manifests
from api.meta import ObjectMeta
from api.slo.v1alpha1 import NodeMetric, NodeMetricCollectPolicy, NodeMetricSpec
from pkg.client import errors
from pkg.client.config import ClientOptions
from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import CONFIGMAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, PODS
from pkg.client.rest import AUTH_REFRESH_SECONDS, Client
from pkg.util.clock import FakeClock
from pkg.util.flowcontrol import TokenBucket
from test.apiserver import ServerHandle, new_token, start


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    with start() as s:
        yield s


@pytest.fixture(scope="module")
def client(srv: ServerHandle) -> Client:
    c = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    c.create(NAMESPACES, {"metadata": {"name": "rest"}})
    return c


def cm(name: str, **labels: str) -> dict:
    return {"metadata": {"name": name, "namespace": "rest", "labels": labels},
            "data": {"k": "v"}}


def test_crud_and_errors(client: Client) -> None:
    created = client.create(CONFIGMAPS, cm("a", app="x"))
    assert created["metadata"]["uid"] and created["data"] == {"k": "v"}
    assert client.get(CONFIGMAPS, "a", "rest")["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(ApiError) as exc:
        client.create(CONFIGMAPS, cm("a"))
    assert errors.is_already_exists(exc.value)

    created["data"]["k"] = "v2"
    updated = client.update(CONFIGMAPS, created)
    assert updated["data"]["k"] == "v2"
    # The first write's resourceVersion is stale now: optimistic concurrency says Conflict.
    with pytest.raises(ApiError) as exc:
        client.update(CONFIGMAPS, created)
    assert errors.is_conflict(exc.value)

    merged = client.patch(CONFIGMAPS, "a", {"data": {"m": "1"}}, "rest")
    assert merged["data"] == {"k": "v2", "m": "1"}
    jp = client.patch(CONFIGMAPS, "a", [{"op": "remove", "path": "/data/m"}], "rest",
                      patch_type="json")
    assert jp["data"] == {"k": "v2"}
    client.delete(CONFIGMAPS, "a", "rest")
    with pytest.raises(ApiError) as exc:
        client.get(CONFIGMAPS, "a", "rest")
    assert errors.is_not_found(exc.value)


def test_list_selectors_and_pagination(client: Client) -> None:
    for i in range(5):
        client.create(CONFIGMAPS, cm(f"page-{i}", group="pages", idx=str(i % 2)))
    page = client.list(CONFIGMAPS, "rest", label_selector="group=pages", limit=2)
    assert len(page["items"]) == 2 and page["metadata"]["continue"]
    everything = client.list_all(CONFIGMAPS, "rest", label_selector="group=pages", page_size=2)
    assert [o["metadata"]["name"] for o in everything["items"]] == \
        [f"page-{i}" for i in range(5)]
    assert "continue" not in everything["metadata"] and everything["metadata"]["resourceVersion"]
    odd = client.list_all(CONFIGMAPS, "rest", label_selector="group=pages,idx=1")
    assert [o["metadata"]["name"] for o in odd["items"]] == ["page-1", "page-3"]
    assert client.list(CONFIGMAPS, "rest", field_selector="metadata.name=page-4")["items"][0][
        "metadata"]["name"] == "page-4"


def test_watch_streams_events_in_order_and_ends_at_timeout(client: Client) -> None:
    rv = client.list(CONFIGMAPS, "rest")["metadata"]["resourceVersion"]
    client.create(CONFIGMAPS, cm("w"))
    client.patch(CONFIGMAPS, "w", {"data": {"k": "2"}}, "rest")
    client.delete(CONFIGMAPS, "w", "rest")
    seen = [(e["type"], e["object"]["metadata"]["name"])
            for e in client.watch(CONFIGMAPS, "rest", resource_version=rv, timeout_seconds=1)
            if e["type"] != "BOOKMARK"]
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_stop_from_another_thread(client: Client) -> None:
    stream = client.watch(CONFIGMAPS, "rest", resource_version="0", timeout_seconds=60)
    got: list[str] = []
    done = threading.Event()

    def read() -> None:
        for e in stream:
            got.append(e["type"])
        done.set()

    t = threading.Thread(target=read, daemon=True)
    t.start()
    threading.Timer(0.3, stream.stop).start()
    assert done.wait(5), "stop() did not end the watch"
    assert got and set(got) == {"ADDED"}


def test_connections_are_reused_when_many_are_open_at_once(srv: ServerHandle) -> None:
    """A component holds a connection per watch and per binding worker at once: with the
    kubernetes package's default pool (5 per core) the connections past it were discarded on
    release, so each later request paid a new TLS handshake."""
    c = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    pool = c._pool.connection_from_url(c.url("/api"))

    def hold(n: int) -> None:
        open_ = [c.request("GET", "/api/v1/namespaces", stream=True) for _ in range(n)]
        for resp in open_:
            resp.read()
            resp.release_conn()

    hold(30)
    made = pool.num_connections
    assert made == 30
    hold(30)
    assert pool.num_connections == made, "connections were discarded and made again"


def test_expired_resource_version_is_an_error_event() -> None:
    with start(watch_cache_size=2) as small:
        c = Client.from_kubeconfig(small.kubeconfig, qps=-1)
        rv = c.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
        for i in range(4):
            c.create(CONFIGMAPS, {"metadata": {"name": f"x{i}", "namespace": "default"}})
        events = list(c.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=1))
        assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_typed_client_decodes_crd_models(client: Client) -> None:
    crd = next(m for m in crd_manifests()
               if m["metadata"]["name"] == NodeMetric.crd_name())
    client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    metrics = client.typed(NodeMetric)
    nm = metrics.create(NodeMetric(
        metadata=ObjectMeta(name="node-1"),
        spec=NodeMetricSpec(
            metric_collect_policy=NodeMetricCollectPolicy(report_interval_seconds=60))))
    assert isinstance(nm, NodeMetric)
    assert nm.metadata.resource_version
    got = metrics.get("node-1")
    assert isinstance(got, NodeMetric)
    assert got.spec is not None and got.spec.metric_collect_policy is not None
    assert got.spec.metric_collect_policy.report_interval_seconds == 60
    items, rv = metrics.list()
    assert [i.metadata.name for i in items] == ["node-1"] and rv


def test_every_request_takes_a_token(srv: ServerHandle) -> None:
    clock = FakeClock()
    c = Client.from_kubeconfig(srv.kubeconfig)
    c.rate_limiter = TokenBucket(qps=1, burst=2, clock=clock)
    c.get(NAMESPACES, "default")
    c.get(NAMESPACES, "default")
    done = threading.Event()

    def run() -> None:
        c.get(NAMESPACES, "default")
        done.set()

    t = threading.Thread(target=run)
    t.start()
    assert clock.wait_for_waiters(1)
    assert not done.wait(0.1), "the third request went out without a token"
    clock.step(1.0)
    assert done.wait(5)
    t.join(5)


def test_token_authentication(tmp_path: Path) -> None:
    token = new_token()
    with start(token=token) as s:
        c = Client.from_kubeconfig(s.kubeconfig)
        assert c.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        wrong = tmp_path / "kubeconfig"
        wrong.write_text(Path(s.kubeconfig).read_text().replace(token, "wrong"))
        with pytest.raises(ApiError) as exc:
            Client.from_kubeconfig(str(wrong)).list(PODS)
        assert exc.value.status == 401


def test_a_refreshed_token_is_used_within_a_second() -> None:
    # The configuration's refresh hook (a rotated token) is asked at most once a second.
    token = new_token()
    clock = FakeClock()
    with start(token=token) as s:
        c = Client.from_options(ClientOptions(kubeconfig=s.kubeconfig), clock=clock)
        assert c.get(NAMESPACES, "default")

        def rotate(configuration: Any) -> None:
            configuration.api_key = {"BearerToken": "Bearer rotated-away"}
            configuration.api_key_prefix = {}

        # kubernetes types the hook attribute as None although it calls any callable there.
        c.configuration.refresh_api_key_hook = rotate  # type: ignore[assignment]
        assert c.get(NAMESPACES, "default")  # the token read a moment ago
        clock.step(AUTH_REFRESH_SECONDS)
        with pytest.raises(ApiError) as exc:
            c.get(NAMESPACES, "default")
        assert exc.value.status == 401


def test_unreachable_server_is_a_connection_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = Client.from_kubeconfig(None, master=f"http://127.0.0.1:{port}")
    with pytest.raises(ConnectionFailure):
        c.list(PODS)


def test_throttled_requests_are_retried_after_retry_after() -> None:
    import http.server
    import json as _json

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hits.append(self.path)
            if len(hits) == 1:
                body = _json.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests",
                                    "message": "slow down"}).encode()
                self.send_response(429)
                self.send_header("Retry-After", "0")
            else:
                body = b'{"kind": "Namespace", "metadata": {"name": "default"}}'
                self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        c = Client.from_kubeconfig(None, master=f"http://127.0.0.1:{httpd.server_port}")
        assert c.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert hits == ["/api/v1/namespaces/default"] * 2
    finally:
        httpd.shutdown()
        httpd.server_close()
