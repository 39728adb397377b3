"""CachedReader against the embedded API server: once synced, reads come from the informer
cache (no API call), a miss falls back to the API, and other resources go to the API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from manager.webhook.cached_reader import CachedReader
from pkg.client import ApiError
from pkg.client.resources import CONFIGMAPS, NAMESPACES
from pkg.client.rest import Client
from test.apiserver import start
from test.e2e.cluster import wait_for


@pytest.fixture
def client() -> Iterator[Client]:
    with start() as srv:
        c = Client.from_kubeconfig(srv.kubeconfig)
        yield c
        c.close()


def test_synced_reads_come_from_the_cache(client: Client, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "team-a", "labels": {"x": "1"}}})
    reader = CachedReader(client, [NAMESPACES])
    reader.start()
    try:
        wait_for(reader.has_synced, what="namespace informer synced")
        calls: list[str] = []
        real_get, real_list = client.get, client.list_all
        monkeypatch.setattr(client, "get", lambda *a, **k: calls.append("get") or real_get(
            *a, **k))
        monkeypatch.setattr(client, "list_all", lambda *a, **k: calls.append(
            "list") or real_list(*a, **k))
        assert reader.get(NAMESPACES, "team-a")["metadata"]["labels"]["x"] == "1"
        names = {n["metadata"]["name"] for n in reader.list_all(NAMESPACES)["items"]}
        assert "team-a" in names
        assert calls == []  # served by the informer
        # Not cached (yet, or at all): the API server answers, a 404 stays a 404.
        with pytest.raises(ApiError) as e:
            reader.get(NAMESPACES, "nope")
        assert e.value.status == 404
        assert calls == ["get"]
        client.create(CONFIGMAPS, {"metadata": {"name": "cm", "namespace": "team-a"}},
                      "team-a")
        assert reader.get(CONFIGMAPS, "cm", "team-a")["metadata"]["name"] == "cm"
        assert calls == ["get", "get"]
        # A change reaches the cache through the watch.
        ns = client.get(NAMESPACES, "team-a")
        ns["metadata"]["labels"] = {"x": "2"}
        client.update(NAMESPACES, ns)
        wait_for(lambda: reader.get(NAMESPACES, "team-a")["metadata"]["labels"].get("x") == "2",
                 what="the label change in the cache")
    finally:
        reader.stop()
