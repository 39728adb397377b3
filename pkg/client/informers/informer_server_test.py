"""Informers against the embedded API server: no event is lost across server-side watch
closes, a forced 410 Gone, and a server restart; the factory shares informers; CRDs decode
into api models."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.crds import crd_manifests
from api.slo.v1alpha1 import NodeMetric
from pkg.client.errors import ApiError
from pkg.client.informers.factory import SharedInformerFactory
from pkg.client.informers.fake import Recorder
from pkg.client.informers.store import NODE_NAME_INDEX
from pkg.client.resources import (
    CONFIGMAPS,
    CUSTOM_RESOURCE_DEFINITIONS,
    NAMESPACES,
    NODE_METRICS,
    PODS,
)
from pkg.client.rest import Client
from pkg.util.flowcontrol import Backoff
from test.apiserver import ServerHandle, start

NS = "inf"


def fast_backoff() -> Backoff:
    return Backoff(initial=0.05, cap=0.5, jitter=0.5)


SEL = "test=informer"  # leaves out the namespace's kube-root-ca.crt


def cm(name: str, **data: str) -> dict:
    return {"metadata": {"name": name, "namespace": NS, "labels": {"test": "informer"}},
            "data": data}


def server_state(client: Client) -> dict[str, str]:
    items = client.list_all(CONFIGMAPS, NS, label_selector=SEL)["items"]
    return {f"{NS}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in items}


def cache_state(rec: Recorder) -> dict[str, str]:
    return {k: o["metadata"]["resourceVersion"] for k, o in rec.state().items()}


def wait_until(pred: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def srv() -> Iterator[ServerHandle]:
    with start() as s:
        yield s


def setup(srv: ServerHandle, **factory_kw: Any) -> tuple[Client, SharedInformerFactory]:
    client = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    try:
        client.create(NAMESPACES, {"metadata": {"name": NS}})
    except ApiError:
        pass
    factory = SharedInformerFactory(client, backoff=fast_backoff, **factory_kw)
    return client, factory


def test_every_write_seen_across_server_side_watch_closes(srv: ServerHandle) -> None:
    client, factory = setup(srv, watch_timeout=1)  # the server ends each watch after 1-2 s
    inf = factory.informer_for(CONFIGMAPS, namespace=NS, label_selector=SEL)
    rec = Recorder()
    inf.add_event_handler(rec)
    factory.start()
    try:
        assert factory.wait_for_cache_sync(timeout=30)
        written: list[str] = []  # resourceVersion of every write
        rng = random.Random(1)
        names: list[str] = []
        deadline = time.monotonic() + 4.0
        i = 0
        while time.monotonic() < deadline:
            i += 1
            op = rng.random()
            if op < 0.4 or not names:
                name = f"cm-{i}"
                written.append(client.create(CONFIGMAPS, cm(name))["metadata"]["resourceVersion"])
                names.append(name)
            elif op < 0.8:
                name = rng.choice(names)
                out = client.patch(CONFIGMAPS, name, {"data": {"i": str(i)}}, NS)
                written.append(out["metadata"]["resourceVersion"])
            else:
                name = names.pop(rng.randrange(len(names)))
                out = client.delete(CONFIGMAPS, name, NS)
                written.append(out["metadata"]["resourceVersion"])
            time.sleep(0.005)
        assert wait_until(lambda: cache_state(rec) == server_state(client)), \
            "the handler's view differs from the server"
        seen = {rv for _, _, rv, _ in rec.events}
        missing = [rv for rv in written if rv not in seen]
        assert not missing, f"writes never delivered: {missing[:10]}"
        stats = inf.reflector.stats
        assert stats.watches >= 3, "the watch was never closed by the server"
        assert stats.lists == 1, "a server-side close must resume, not relist"
        assert not any(k == "tombstone" for k, *_ in rec.events)
    finally:
        factory.shutdown()


def test_forced_410_relists_and_delivers_what_happened_meanwhile() -> None:
    with start(watch_cache_size=4) as srv:
        client, factory = setup(srv)
        for name in ("keep", "change", "drop"):
            client.create(CONFIGMAPS, cm(name))
        inf = factory.informer_for(CONFIGMAPS, namespace=NS, label_selector=SEL)
        rec = Recorder()
        inf.add_event_handler(rec)
        factory.start()
        try:
            assert factory.wait_for_cache_sync(timeout=30)
            assert wait_until(lambda: inf.reflector.stats.watches >= 1)
            info = srv.api.info("", "v1", "configmaps")

            async def outage() -> None:
                # In one step of the server's loop, so the reflector cannot re-watch in between:
                # end the watch, then write more than the watch cache keeps.
                srv.server.handlers.close_watchers()
                api = srv.api
                await api.patch(info, NS, "change", "application/merge-patch+json",
                                b'{"data":{"v":"2"}}')
                await api.delete(info, NS, "drop")
                for i in range(6):
                    await api.create(info, NS, cm(f"new-{i}"))

            srv.call(outage)
            assert wait_until(lambda: cache_state(rec) == server_state(client))
            stats = inf.reflector.stats
            assert stats.expired >= 1 and stats.lists == 2
            after_sync = rec.events[3:]
            kinds = sorted((k, key) for k, key, _, _ in after_sync)
            assert kinds == sorted([("update", f"{NS}/change"), ("tombstone", f"{NS}/drop")] +
                                   [("add", f"{NS}/new-{i}") for i in range(6)])
            tomb = next(e for e in after_sync if e[0] == "tombstone")
            assert tomb[3]["metadata"]["name"] == "drop"
        finally:
            factory.shutdown()


def test_server_restart_relists_deletes_and_adds() -> None:
    first = start(tls=False)
    port = int(first.url.rsplit(":", 1)[1])
    client, factory = setup(first)
    for name in ("a", "b", "c"):
        client.create(CONFIGMAPS, cm(name, gen="1"))
    inf = factory.informer_for(CONFIGMAPS, namespace=NS, label_selector=SEL)
    rec = Recorder()
    inf.add_event_handler(rec)
    factory.start()
    second: ServerHandle | None = None
    try:
        assert factory.wait_for_cache_sync(timeout=30)
        assert wait_until(lambda: inf.reflector.stats.watches >= 1)
        first.stop()
        assert wait_until(lambda: inf.reflector.stats.errors >= 1), "outage not noticed"
        # A new server on the same address, with different data (and its own
        # resourceVersion space starting over).
        second = start(tls=False, port=port)
        client.create(NAMESPACES, {"metadata": {"name": NS}})
        client.create(CONFIGMAPS, cm("b", gen="2"))
        client.create(CONFIGMAPS, cm("d", gen="2"))
        assert wait_until(lambda: cache_state(rec) == server_state(client)), \
            (cache_state(rec), server_state(client))
        b = inf.lister.get("b", NS)
        assert b is not None and b["data"] == {"gen": "2"}
        events = [(k, key) for k, key, _, _ in rec.events[3:]]
        assert ("tombstone", f"{NS}/a") in events and ("tombstone", f"{NS}/c") in events
        assert ("add", f"{NS}/d") in events
        assert ("update", f"{NS}/b") in events
        assert inf.reflector.stats.lists >= 2
    finally:
        factory.shutdown()
        first.stop()
        if second is not None:
            second.stop()


def test_factory_shares_informers_and_indexes_pods_by_node(srv: ServerHandle) -> None:
    client, factory = setup(srv)
    pods = factory.informer_for(PODS)
    assert factory.informer_for(PODS) is pods
    assert factory.informer_for(PODS, label_selector="app=web") is not pods
    assert factory.informer_for(PODS, namespace=NS) is not pods
    assert factory.informer_for(CONFIGMAPS) is not pods
    for i, node in enumerate(["n1", "n1", None]):
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
        if node:
            spec["nodeName"] = node
        client.create(PODS, {"metadata": {"name": f"p{i}", "namespace": NS,
                                          "labels": {"app": "web"}}, "spec": spec})
    factory.start()
    try:
        assert all(factory.wait_for_cache_sync(timeout=30).values())
        on_n1 = pods.indexer.by_index(NODE_NAME_INDEX, "n1")
        assert sorted(p["metadata"]["name"] for p in on_n1) == ["p0", "p1"]
        p2 = pods.lister.get("p2", NS)
        assert p2 is not None and p2["kind"] == "Pod"
        web = factory.informer_for(PODS, label_selector="app=web")
        assert len(web.lister.namespace(NS).list()) == 3
        # An informer created after start() starts at once.
        late = factory.informer_for(NAMESPACES)
        assert late.wait_for_sync(10) and late.lister.get(NS) is not None
    finally:
        factory.shutdown()


def test_crd_informer_decodes_models(srv: ServerHandle) -> None:
    client, factory = setup(srv)
    crd = next(m for m in crd_manifests() if m["metadata"]["name"] == NodeMetric.crd_name())
    client.create(CUSTOM_RESOURCE_DEFINITIONS, crd)
    res = NODE_METRICS
    client.create(res, {"apiVersion": res.api_version, "kind": "NodeMetric",
                        "metadata": {"name": "n1"}})
    typed = factory.informer_for(res)
    raw = factory.informer_for(res, typed=False)
    assert typed is not raw
    got: list[Any] = []
    done = threading.Event()
    typed.add_event_handler(_Adds(got, done))
    factory.start()
    try:
        assert all(factory.wait_for_cache_sync(timeout=30).values())
        assert isinstance(typed.lister.get("n1"), NodeMetric)
        assert isinstance(raw.lister.get("n1"), dict)
        client.create(res, {"apiVersion": res.api_version, "kind": "NodeMetric",
                            "metadata": {"name": "n2"}})
        assert done.wait(10)
        assert all(isinstance(o, NodeMetric) for o in got)
    finally:
        factory.shutdown()


class _Adds:
    def __init__(self, got: list[Any], done: threading.Event) -> None:
        self.got, self.done = got, done

    def on_add(self, obj: Any, initial: bool) -> None:
        self.got.append(obj)
        if len(self.got) == 2:
            self.done.set()

    def on_update(self, old: Any, new: Any) -> None:
        pass

    def on_delete(self, obj: Any) -> None:
        pass
