"""The kubelet pod source against a local HTTP server serving a PodList.

The server is a test double: no kubelet can run on this machine. It only answers
``GET /pods/`` and ``/configz`` on the read-only-port path (plain HTTP,
``--kubelet-insecure-tls``) with whatever body the test sets; the HTTPS port with kubeconfig
credentials is not exercised.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from koordlet.statesinformer.kubelet_pods import (
    KubeletConfig,
    KubeletError,
    KubeletPodsInformer,
    KubeletStub,
)


class FakeKubelet:
    def __init__(self) -> None:
        self.body = b""
        self.paths: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                owner.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, *names: str) -> None:
        self.body = json.dumps({"kind": "PodList", "apiVersion": "v1", "items": [
            {"metadata": {"name": n, "namespace": "default", "uid": f"uid-{n}"},
             "status": {"phase": "Running"}} for n in names]}).encode()


@pytest.fixture
def kubelet() -> Iterator[FakeKubelet]:
    k = FakeKubelet()
    yield k
    k.server.shutdown()


NODE = {"metadata": {"name": "node-a"},
        "status": {"addresses": [{"type": "Hostname", "address": "node-a"},
                                 {"type": "InternalIP", "address": "127.0.0.1"}],
                   "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}


def test_pods_come_from_kubelet_and_a_malformed_body_keeps_the_last_good_list(
        kubelet: FakeKubelet, caplog: pytest.LogCaptureFixture) -> None:
    synced: list[int] = []
    stub = KubeletStub(KubeletConfig(preferred_address_type="NoSuchType", insecure_tls=True,
                                     read_only_port=kubelet.port, sync_timeout=2))
    informer = KubeletPodsInformer(stub, lambda: NODE, lambda: synced.append(1))
    kubelet.serve("a", "b")
    assert informer.sync() and informer.has_synced()
    assert [p["metadata"]["name"] for p in informer.pods()] == ["a", "b"]
    assert kubelet.paths == ["/pods/"] and synced == [1]

    kubelet.body = b"{not json"
    with caplog.at_level(logging.WARNING):
        assert not informer.sync()
    assert "node-a" in caplog.text and "not JSON" in caplog.text
    kubelet.body = b'{"kind": "Status", "items": "nope"}'
    assert not informer.sync()
    kubelet.serve()  # an empty list (kubelet restarting) keeps the old pods too
    assert not informer.sync()
    assert [p["metadata"]["name"] for p in informer.pods()] == ["a", "b"] and synced == [1]

    kubelet.serve("c")
    assert informer.sync()
    assert [p["metadata"]["name"] for p in informer.pods()] == ["c"] and synced == [1, 1]


def test_kubelet_configuration_comes_from_configz(kubelet: FakeKubelet) -> None:
    stub = KubeletStub(KubeletConfig(insecure_tls=True, read_only_port=kubelet.port,
                                     sync_timeout=2))
    kubelet.body = b'{"kubeletconfig": {"cpuManagerPolicy": "static"}}'
    assert stub.get_kubelet_configuration(NODE) == {"cpuManagerPolicy": "static"}
    assert kubelet.paths == ["/configz"]
    for body in (b"{not json", b'{"kind": "Status"}'):
        kubelet.body = body
        with pytest.raises(KubeletError, match="configz"):
            stub.get_kubelet_configuration(NODE)


def test_kubelet_url_follows_the_flags() -> None:
    https = KubeletStub(KubeletConfig(preferred_address_type="Hostname"))
    assert https.url(NODE) == "https://node-a:10250/pods/"
    insecure = KubeletStub(KubeletConfig(insecure_tls=True))
    assert insecure.url(NODE) == "http://127.0.0.1:10255/pods/"


def test_poller_fires_on_interval_until_stopped(kubelet: FakeKubelet) -> None:
    kubelet.serve("a")
    stub = KubeletStub(KubeletConfig(insecure_tls=True, read_only_port=kubelet.port,
                                     sync_interval=0.1))
    fired = threading.Semaphore(0)
    informer = KubeletPodsInformer(stub, lambda: NODE, fired.release)
    stop = threading.Event()
    t = threading.Thread(target=informer.run, args=(stop,))
    t.start()
    try:
        assert all(fired.acquire(timeout=30) for _ in range(3))
    finally:
        stop.set()
        t.join(30)
    assert not t.is_alive()
