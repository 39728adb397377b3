from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pkg.client.errors import ApiError
from pkg.client.resources import PODS
from pkg.client.rest import Client
from scheduler.framework.binder import ApiBinder, InMemoryBinder
from scheduler.framework.types import PodInfo
from test.apiserver import ServerHandle, start


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    with start() as s:
        yield s


@pytest.fixture
def client(srv: ServerHandle) -> Iterator[Client]:
    c = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
    yield c
    c.close()


def make_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def test_api_binder_assigns_the_pod(client: Client) -> None:
    srv_pod = client.create(PODS, make_pod("bind-me"), "default")
    ApiBinder(client).bind(PodInfo(srv_pod), "node-1")
    bound = client.get(PODS, "bind-me", "default")
    assert bound["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= next(
        c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled").items()


def test_binding_a_bound_pod_is_a_conflict(client: Client) -> None:
    pod = PodInfo(client.create(PODS, make_pod("twice"), "default"))
    binder = ApiBinder(client)
    binder.bind(pod, "node-1")
    with pytest.raises(ApiError) as err:
        binder.bind(pod, "node-2")
    assert err.value.status == 409
    assert client.get(PODS, "twice", "default")["spec"]["nodeName"] == "node-1"


def test_binding_a_recreated_pod_fails_its_uid_precondition(client: Client) -> None:
    old = PodInfo(client.create(PODS, make_pod("again"), "default"))
    client.delete(PODS, "again", "default")
    client.create(PODS, make_pod("again"), "default")
    with pytest.raises(ApiError) as err:
        ApiBinder(client).bind(old, "node-1")
    assert err.value.status == 409
    assert not client.get(PODS, "again", "default")["spec"].get("nodeName")


def test_in_memory_binder_records_and_reports_the_bound_pod() -> None:
    seen: list[dict[str, Any]] = []
    binder = InMemoryBinder(seen.append)
    pod = PodInfo(make_pod("p"))
    binder.bind(pod, "node-3")
    assert binder.bindings == {"default/p": "node-3"}
    assert [p["spec"]["nodeName"] for p in seen] == ["node-3"]
    # The scheduler's own pod object is left as it was.
    assert not pod.pod["spec"].get("nodeName")
