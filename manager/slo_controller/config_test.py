"""SLOConfigCache against the embedded API server: the config in force, last good value per
key, Events naming a refused key, listeners."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from api.configuration import SLOControllerConfig
from manager.slo_controller.config import SLOConfigCache
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import CONFIGMAPS, EVENTS, NAMESPACES
from pkg.client.rest import Client
from pkg.events import EventBroadcaster
from test.apiserver import ServerHandle, start
from test.e2e.cluster import wait_for

NS = "koordinator-system"
NAME = "slo-controller-config"


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    s = start()
    yield s
    s.stop()


@pytest.fixture
def client(srv: ServerHandle) -> Iterator[Client]:
    c = Client.from_kubeconfig(srv.kubeconfig, qps=-1)  # no client-side throttling
    try:
        c.create(NAMESPACES, {"metadata": {"name": NS}})
    except Exception:  # noqa: BLE001 - created by an earlier test of the module
        pass
    yield c
    try:
        c.delete(CONFIGMAPS, NAME, NS)
    except Exception:  # noqa: BLE001 - not every test creates it
        pass


class Changes:
    """A listener that keeps every (old, new) it is called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[SLOControllerConfig, SLOControllerConfig]] = []
        self.cond = threading.Condition()

    def __call__(self, old: SLOControllerConfig, new: SLOControllerConfig) -> None:
        with self.cond:
            self.calls.append((old, new))
            self.cond.notify_all()


@pytest.fixture
def cache(client: Client) -> Iterator[tuple[SLOConfigCache, Changes, EventBroadcaster]]:
    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    c = SLOConfigCache(factory, broadcaster.new_recorder("koord-manager"), NS, NAME)
    changes = Changes()
    c.add_listener(changes)
    factory.start()
    factory.wait_for_cache_sync(10)
    yield c, changes, broadcaster
    factory.shutdown()
    broadcaster.shutdown(5)


def configmap(data: dict[str, Any], name: str = NAME, ns: str = NS) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns},
            "data": {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}}


def put(client: Client, data: dict[str, Any]) -> None:
    current = client.get(CONFIGMAPS, NAME, NS)
    current["data"] = configmap(data)["data"]
    client.update(CONFIGMAPS, current)


def events_for(client: Client, reason: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, NS)["items"]
            if e["reason"] == reason and e["involvedObject"]["name"] == NAME]


def test_absent_configmap_means_defaults_and_is_available(cache: Any) -> None:
    c, changes, _ = cache
    assert wait_for(c.available, 30)
    assert c.current() == SLOControllerConfig()
    assert c.errors() == {}
    assert changes.calls == []


def test_configmap_takes_effect_and_listeners_see_old_and_new(client: Client,
                                                              cache: Any) -> None:
    c, changes, _ = cache
    client.create(CONFIGMAPS, configmap({
        "colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 70},
        "resource-threshold-config": {"clusterStrategy": {"enable": True}},
    }))
    wait_for(lambda: changes.calls, 5, what="listener call")
    old, new = changes.calls[-1]
    assert old.colocation.enable is False
    assert new.colocation.enable is True
    assert new.colocation.cpu_reclaim_threshold_percent == 70
    # defaults merged under the configured fields
    assert new.colocation.memory_reclaim_threshold_percent == 65
    assert new.resource_threshold.cluster_strategy.enable is True
    assert new.resource_threshold.cluster_strategy.cpu_suppress_threshold_percent == 65
    assert c.current() is new


def test_malformed_key_keeps_last_good_value_and_records_an_event(client: Client,
                                                                  cache: Any) -> None:
    c, changes, broadcaster = cache
    client.create(CONFIGMAPS, configmap({
        "colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 70},
        "cpu-burst-config": {"clusterStrategy": {"policy": "auto"}},
    }))
    wait_for(lambda: c.current().colocation.enable, 5, what="first config")
    put(client, {
        "colocation-config": '{"enable": true, "cpuReclaimThresholdPercent": "seventy"}',
        "cpu-burst-config": "{not json",
        "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 150}},
    })
    wait_for(lambda: c.current().system.cluster_strategy.min_free_kbytes_factor == 150, 5,
             what="the good key applied")
    cfg = c.current()
    assert cfg.colocation.cpu_reclaim_threshold_percent == 70  # last good value kept
    assert cfg.cpu_burst.cluster_strategy.policy == "auto"
    assert set(c.errors()) == {"colocation-config", "cpu-burst-config"}
    assert "cpuReclaimThresholdPercent" in c.errors()["colocation-config"]
    assert c.is_error("cpu-burst-config") and not c.is_error("system-config")

    broadcaster.flush(5)
    colocation = wait_for(lambda: events_for(client, "ColocationCfgUnmarshalFailed"), 5)
    assert colocation[0]["type"] == "Warning"
    assert "colocation-config" in colocation[0]["message"]
    assert "cpuReclaimThresholdPercent" in colocation[0]["message"]
    burst = wait_for(lambda: events_for(client, "SLOCfgUnmarshalFailed"), 5)
    assert "cpu-burst-config" in burst[0]["message"]
    assert "invalid JSON" in burst[0]["message"]

    # The key is fixed: it takes effect and its error is gone.
    put(client, {"colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 80}})
    wait_for(lambda: c.current().colocation.cpu_reclaim_threshold_percent == 80, 5)
    assert c.errors() == {}


def test_invalid_cluster_strategy_is_refused(client: Client, cache: Any) -> None:
    c, _, _ = cache
    client.create(CONFIGMAPS, configmap({"colocation-config": {"enable": True}}))
    wait_for(lambda: c.current().colocation.enable, 5)
    put(client, {"colocation-config": {"enable": True, "degradeTimeMinutes": 0}})
    wait_for(lambda: c.is_error("colocation-config"), 5)
    assert "degradeTimeMinutes" in c.errors()["colocation-config"]
    assert c.current().colocation.degrade_time_minutes == 15


def test_same_data_other_objects_and_deletion_change_nothing(client: Client,
                                                             cache: Any) -> None:
    c, changes, _ = cache
    client.create(CONFIGMAPS, configmap({"colocation-config": {"enable": True}}))
    wait_for(lambda: changes.calls, 30)
    applied = c.current()
    calls = len(changes.calls)

    cm = client.get(CONFIGMAPS, NAME, NS)
    cm["metadata"]["labels"] = {"touched": "yes"}
    client.update(CONFIGMAPS, cm)
    client.create(CONFIGMAPS, configmap({"colocation-config": "{bad"}, name="other"))
    client.create(CONFIGMAPS, configmap({"colocation-config": "{bad"}, ns="default"))
    client.delete(CONFIGMAPS, NAME, NS)
    wait_for(lambda: c.informer.lister.get(NAME, NS) is None, 5, what="deletion seen")

    assert len(changes.calls) == calls
    assert c.current() is applied
    assert c.errors() == {}
    client.delete(CONFIGMAPS, "other", NS)
    client.delete(CONFIGMAPS, NAME, "default")


def test_deeply_nested_key_keeps_last_good_value_and_records_an_event(client: Client,
                                                                       cache: Any) -> None:
    # colocation-config nested 5,000 levels raised RecursionError in koord-manager, no event.
    c, _, broadcaster = cache
    client.create(CONFIGMAPS, configmap({
        "colocation-config": {"enable": True, "cpuReclaimThresholdPercent": 70}}))
    wait_for(lambda: c.current().colocation.enable, 30, what="first config")
    deep = "[" * 5000 + "]" * 5000
    put(client, {"colocation-config": '{"enable": false, "x": ' + deep + "}",
                 "resource-qos-config": deep,
                 "system-config": {"clusterStrategy": {"minFreeKbytesFactor": 150}}})
    wait_for(lambda: c.current().system.cluster_strategy.min_free_kbytes_factor == 150, 30,
             what="the good key applied")
    assert c.current().colocation.enable is True  # last good value kept
    assert c.current().colocation.cpu_reclaim_threshold_percent == 70
    why = "invalid JSON: JSON nested more than 100 levels deep"
    assert c.errors() == {"colocation-config": why, "resource-qos-config": why}
    broadcaster.flush(30)
    colocation = wait_for(lambda: [e for e in events_for(client, "ColocationCfgUnmarshalFailed")
                                   if why in e["message"]], 30, what="the colocation event")
    assert colocation[0]["type"] == "Warning"
    assert colocation[0]["message"] == (
        f"failed to parse colocation-config, keeping the last good value: {why}")
    wait_for(lambda: [e for e in events_for(client, "SLOCfgUnmarshalFailed")
                      if "resource-qos-config" in e["message"] and why in e["message"]], 30,
             what="the resource-qos-config event")
