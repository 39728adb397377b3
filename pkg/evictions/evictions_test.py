"""PodEvictor against the embedded API server: each answer of the Eviction API (201, 404, 409,
429 for a PodDisruptionBudget, 500 for two of them), the delete fallback, the dry run, and the
events recorded on the pod."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pkg.client.config import ClientOptions
from pkg.client.errors import ApiError
from pkg.client.resources import EVENTS, POD_DISRUPTION_BUDGETS, PODS
from pkg.client.rest import Client
from pkg.events.recorder import WARNING, EventBroadcaster
from pkg.evictions import EvictionEvents, EvictionResult, PodEvictor, evict_pod
from pkg.util.clock import NoWaitClock
from test.apiserver import start

NS = "default"
EVENT_REASONS = EvictionEvents(WARNING, "evictPodSuccess", "evictPodFail")


@pytest.fixture
def client() -> Iterator[Client]:
    with start() as srv:
        srv.add_nodes(1)
        c = Client.from_config(ClientOptions(kubeconfig=srv.kubeconfig).load(),
                               clock=NoWaitClock())
        yield c
        c.close()


def _wait(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30.0  # only bounds a failure
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _running_pod(client: Client, name: str, labels: dict[str, str] | None = None) -> Any:
    """A pod the simulated kubelet runs (a pending one is deleted without the PDB check)."""
    client.create(PODS, {"metadata": {"name": name, "namespace": NS, "labels": labels or {}},
                         "spec": {"nodeName": "node-0",
                                  "containers": [{"name": "c", "image": "busybox"}]}}, NS)
    _wait(f"pod {name} running", lambda: (
        client.get(PODS, name, NS).get("status") or {}).get("phase") == "Running")
    return client.get(PODS, name, NS)


def _pdb(client: Client, name: str, labels: dict[str, str]) -> None:
    client.create(POD_DISRUPTION_BUDGETS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}}, NS)


def _live(client: Client) -> set[str]:
    return {p["metadata"]["name"] for p in client.list(PODS, NS)["items"]
            if not p["metadata"].get("deletionTimestamp")}


def _events(client: Client) -> list[tuple[str, str, str]]:
    return sorted((e["involvedObject"]["name"], e["reason"], e["message"])
                  for e in client.list(EVENTS, NS)["items"])


def test_evicts_then_finds_the_pod_gone_and_records_events(client: Client) -> None:
    broadcaster = EventBroadcaster(client)
    evictor = PodEvictor(client, broadcaster.new_recorder("koordlet"), EVENT_REASONS)
    pod = _running_pod(client, "a")
    assert evictor.evict(pod, "why", "evicting a") is EvictionResult.EVICTED
    assert "a" not in _live(client)
    _wait("the simulated kubelet to finish the deletion", lambda: "a" not in {
        p["metadata"]["name"] for p in client.list(PODS, NS)["items"]})
    result = evictor.evict(pod, "why", "evicting a again")
    assert result is EvictionResult.GONE and result.done
    assert broadcaster.flush()
    assert _events(client) == [("a", "evictPodSuccess", "evicting a")]  # none for a gone pod
    broadcaster.shutdown()


def test_a_pod_of_the_same_name_is_not_evicted(client: Client) -> None:
    old = _running_pod(client, "a")
    client.delete(PODS, "a", NS, grace_period_seconds=0)
    _wait("pod a gone", lambda: not client.list(PODS, NS)["items"])
    _running_pod(client, "a")
    result = PodEvictor(client).evict(old, "why", "")
    assert result is EvictionResult.REPLACED and not result.done
    assert "a" in _live(client)


def test_eviction_carries_the_callers_delete_options(client: Client) -> None:
    pod = _running_pod(client, "a")
    # Preconditions of the caller's own replace the pod's UID.
    with pytest.raises(ApiError) as err:
        evict_pod(client, pod, {"preconditions": {"uid": "another-pod"}})
    assert err.value.status == 409
    assert "a" in _live(client)
    evict_pod(client, pod, {"gracePeriodSeconds": 0})
    assert "a" not in _live(client)


def test_disruption_budget_blocks_even_with_the_delete_fallback(client: Client,
                                                                caplog: Any) -> None:
    broadcaster = EventBroadcaster(client)
    evictor = PodEvictor(client, broadcaster.new_recorder("koordlet"), EVENT_REASONS,
                         delete_when_refused=True)
    pod = _running_pod(client, "guarded", {"app": "guarded"})
    _pdb(client, "guard", {"app": "guarded"})
    result = evictor.evict(pod, "why", "evicting guarded")
    assert result is EvictionResult.BLOCKED and not result.done
    assert "guarded" in _live(client)
    assert any("disruption budget" in r.getMessage() for r in caplog.records)
    assert broadcaster.flush()
    assert _events(client) == [("guarded", "evictPodFail", "evicting guarded")]
    broadcaster.shutdown()


def test_other_refusals_fail_or_fall_back_to_delete(client: Client) -> None:
    # Two budgets for one pod: the eviction subresource answers 500.
    pod = _running_pod(client, "twice", {"app": "twice"})
    _pdb(client, "one", {"app": "twice"})
    _pdb(client, "two", {"app": "twice"})
    assert PodEvictor(client).evict(pod, "why", "") is EvictionResult.FAILED
    assert "twice" in _live(client)
    result = PodEvictor(client, delete_when_refused=True).evict(pod, "why", "")
    assert result is EvictionResult.EVICTED
    assert "twice" not in _live(client)


def test_dry_run_sends_nothing(client: Client) -> None:
    pod = _running_pod(client, "a")
    assert PodEvictor(client, dry_run=True).evict(pod, "why", "") is EvictionResult.EVICTED
    assert "a" in _live(client)
