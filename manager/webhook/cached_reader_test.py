"""CachedReader against the embedded API server: once synced, reads come from the informer
cache (no API call), a miss falls back to the API, and other resources go to the API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import pytest

from manager.webhook.cached_reader import CachedReader
from pkg.client import ApiError
from pkg.client.resources import CONFIGMAPS, NAMESPACES
from pkg.client.rest import Client
from test.apiserver import start
from test.e2e.cluster import wait_for

P = ParamSpec("P")
R = TypeVar("R")


def _counted(calls: list[str], name: str, fn: Callable[P, R]) -> Callable[P, R]:
    """``fn``, appending ``name`` to ``calls`` on each call."""
    def counting(*args: P.args, **kwargs: P.kwargs) -> R:
        calls.append(name)
        return fn(*args, **kwargs)
    return counting


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
        monkeypatch.setattr(client, "get", _counted(calls, "get", client.get))
        monkeypatch.setattr(client, "list_all", _counted(calls, "list", client.list_all))
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
