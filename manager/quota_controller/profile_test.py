"""The quota profile controller against the embedded API server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_RESOURCE_KEYS,
    ANNOTATION_TOTAL_RESOURCE,
    ANNOTATION_UNSCHEDULABLE_RESOURCE,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_PROFILE,
    LABEL_QUOTA_TREE_ID,
)
from api.quota.v1alpha1 import ElasticQuotaProfile
from manager.quota_controller.profile import (
    ELASTIC_QUOTA_PROFILES,
    ELASTIC_QUOTAS,
    EVENT_SOURCE,
    QUOTA_MAX,
    QuotaProfileController,
    desired_quota,
    pool_resources,
    resource_list_json,
    tree_id,
)
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import EVENTS, NODES
from pkg.client.rest import Client
from pkg.controller import Result
from pkg.events.recorder import EventBroadcaster
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds, wait_for

NS = "default"


@dataclass
class Env:
    srv: ServerHandle
    client: Client
    ctrl: QuotaProfileController
    events: EventBroadcaster

    def reconcile(self, name: str) -> Result | None:
        return self.ctrl.reconcile(f"{NS}/{name}")

    def quota(self, name: str) -> dict[str, Any]:
        return self.client.get(ELASTIC_QUOTAS, name, NS)

    def cached(self, profile: str, predicate: Any = lambda p: True) -> None:
        """Wait until the controller's cache holds ``profile`` satisfying ``predicate``."""
        wait_for(lambda: (p := self.ctrl.profiles.lister.get(profile, NS)) is not None
                 and predicate(p), what=f"profile {profile} cached")

    def quota_cached(self, name: str, rv: str) -> None:
        wait_for(lambda: ((q := self.ctrl.quotas.lister.get(name, NS)) is not None
                          and q["metadata"]["resourceVersion"] == rv),
                 what=f"quota {name} at {rv} cached")


@pytest.fixture
def env() -> Iterator[Env]:
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig)
    install_crds(client)
    factory = SharedInformerFactory(client)
    events = EventBroadcaster(client)
    ctrl = QuotaProfileController(client, factory, events.new_recorder(EVENT_SOURCE))
    factory.start()
    assert factory.wait_for_cache_sync(timeout=20)
    try:
        yield Env(srv, client, ctrl, events)
    finally:
        factory.shutdown()
        events.shutdown(timeout=2)
        srv.stop()


def profile(name: str, quota: str, selector: dict[str, Any] | None, *,
            ratio: str | None = None, labels: dict[str, str] | None = None,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"quotaName": quota, "nodeSelector": selector}
    if ratio is not None:
        spec["resourceRatio"] = ratio
    if labels is not None:
        spec["quotaLabels"] = labels
    return {"apiVersion": "quota.koordinator.sh/v1alpha1", "kind": "ElasticQuotaProfile",
            "metadata": {"name": name, "namespace": NS, "annotations": annotations or {}},
            "spec": spec}


def test_profile_creates_its_root_quota_from_the_pool(env: Env) -> None:
    env.srv.add_nodes(2, prefix="a-", cpu="8", memory="32Gi", labels={"pool": "a"})
    env.srv.add_nodes(1, prefix="b-", cpu="4", memory="16Gi", labels={"pool": "b"})
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "pool-a", "pool-a-root", {"matchLabels": {"pool": "a"}},
        labels={"team": "infra"}), NS)
    env.cached("pool-a")
    wait_for(lambda: len(env.ctrl.nodes.lister.list()) == 3, what="nodes cached")

    assert env.reconcile("pool-a") == Result(requeue_after=10.0)

    expected_tree = tree_id(NS, "pool-a")
    stored_profile = env.client.get(ELASTIC_QUOTA_PROFILES, "pool-a", NS)
    assert stored_profile["metadata"]["labels"][LABEL_QUOTA_TREE_ID] == expected_tree
    quota = env.quota("pool-a-root")
    assert quota["spec"] == {"min": {"cpu": "16", "memory": "64Gi"},
                             "max": {"cpu": str(QUOTA_MAX), "memory": str(QUOTA_MAX)}}
    assert QUOTA_MAX == 4611686018427387
    labels = quota["metadata"]["labels"]
    assert labels[LABEL_QUOTA_PROFILE] == "pool-a"
    assert labels[LABEL_QUOTA_TREE_ID] == expected_tree
    assert labels[LABEL_QUOTA_IS_ROOT] == "true"
    assert labels["team"] == "infra"
    total = json.loads(quota["metadata"]["annotations"][ANNOTATION_TOTAL_RESOURCE])
    assert total["cpu"] == "16" and total["memory"] == "64Gi" and "pods" in total
    assert quota["metadata"]["annotations"][ANNOTATION_UNSCHEDULABLE_RESOURCE] == "{}"


def test_ratio_scales_and_unready_or_cordoned_nodes_count_as_unschedulable(env: Env) -> None:
    env.srv.add_nodes(3, cpu="10", memory="10Gi", labels={"pool": "a"})
    env.client.patch(NODES, "node-1", {"spec": {"unschedulable": True}})
    node = env.client.get(NODES, "node-2")
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            c["status"] = "False"
    env.client.update_status(NODES, node)
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "p", "q", {"matchLabels": {"pool": "a"}}, ratio="0.45",
        annotations={ANNOTATION_RESOURCE_KEYS: '["cpu","memory","nvidia.com/gpu"]'}), NS)
    env.cached("p")
    wait_for(lambda: any(n["metadata"]["name"] == "node-2" and not _ready(n)
                         for n in env.ctrl.nodes.lister.list()), what="not-ready node cached")

    env.reconcile("p")

    quota = env.quota("q")
    # 30 cores * 0.45 = 13.5 cores in millicores; 30Gi * 0.45 in bytes, printed BinarySI.
    assert quota["spec"]["min"] == {"cpu": "13500m", "memory": "13824Mi", "nvidia.com/gpu": "0"}
    assert set(quota["spec"]["max"]) == {"cpu", "memory", "nvidia.com/gpu"}
    unschedulable = json.loads(
        quota["metadata"]["annotations"][ANNOTATION_UNSCHEDULABLE_RESOURCE])
    assert unschedulable["cpu"] == "9" and unschedulable["memory"] == "9Gi"


def _ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node["status"]["conditions"])


def test_pool_changes_update_the_quota_and_keep_foreign_labels(env: Env) -> None:
    env.srv.add_nodes(1, cpu="8", memory="8Gi", labels={"pool": "a"})
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "p", "q", {"matchLabels": {"pool": "a"}}), NS)
    env.cached("p")
    wait_for(lambda: env.ctrl.nodes.lister.list(), what="node cached")
    env.reconcile("p")
    created = env.client.patch(ELASTIC_QUOTAS, "q", {"metadata": {"labels": {"owner": "me"}}},
                               NS, patch_type="merge")
    env.quota_cached("q", created["metadata"]["resourceVersion"])
    env.cached("p", lambda p: LABEL_QUOTA_TREE_ID in (p.metadata.labels or {}))

    env.reconcile("p")  # nothing changed: no write
    assert env.quota("q")["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]

    env.srv.add_nodes(1, start=1, cpu="8", memory="8Gi", labels={"pool": "a"})
    wait_for(lambda: len(env.ctrl.nodes.lister.list()) == 2, what="second node cached")
    env.reconcile("p")
    quota = env.quota("q")
    assert quota["spec"]["min"] == {"cpu": "16", "memory": "16Gi"}
    assert quota["metadata"]["labels"]["owner"] == "me"


def test_failed_create_is_an_event_and_a_quick_retry(env: Env) -> None:
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "p", "Not_A_Valid_Name", {"matchLabels": {"pool": "a"}}), NS)
    env.cached("p")

    assert env.reconcile("p") == Result(requeue_after=2.0)

    env.events.flush()
    events = [e for e in env.client.list(EVENTS, NS)["items"]
              if e["involvedObject"]["name"] == "p"]
    assert [e["reason"] for e in events] == ["CreateQuotaFailed"]
    assert events[0]["type"] == "Warning"
    assert events[0]["message"].startswith("failed to create quota, err: ")


def test_invalid_node_selector_writes_nothing_and_retries(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "p", "q", {"matchExpressions": [{"key": "pool", "operator": "Near",
                                         "values": ["a"]}]}), NS)
    env.cached("p")

    assert env.reconcile("p") == Result(requeue=True)

    assert env.client.list(ELASTIC_QUOTAS, NS)["items"] == []
    assert "ElasticQuotaProfile default/p: invalid spec.nodeSelector" in caplog.text


def test_a_deleted_profile_leaves_its_quota(env: Env) -> None:
    env.client.create(ELASTIC_QUOTA_PROFILES, profile("p", "q", {}), NS)
    env.cached("p")
    env.reconcile("p")
    env.client.delete(ELASTIC_QUOTA_PROFILES, "p", NS)
    wait_for(lambda: env.ctrl.profiles.lister.get("p", NS) is None, what="profile gone")

    assert env.reconcile("p") is None
    assert env.quota("q")["metadata"]["labels"][LABEL_QUOTA_PROFILE] == "p"


def test_running_controller_follows_spec_changes(env: Env) -> None:
    env.srv.add_nodes(1, prefix="a-", cpu="2", memory="2Gi", labels={"pool": "a"})
    env.srv.add_nodes(1, prefix="b-", cpu="6", memory="6Gi", labels={"pool": "b"})
    env.client.create(ELASTIC_QUOTA_PROFILES, profile(
        "p", "q", {"matchLabels": {"pool": "a"}}), NS)
    assert env.ctrl.start(sync_timeout=10)
    try:
        wait_for(lambda: _min_cpu(env) == "2", what="quota of pool a")
        p = env.client.get(ELASTIC_QUOTA_PROFILES, "p", NS)
        p["spec"]["nodeSelector"] = {"matchLabels": {"pool": "b"}}
        env.client.update(ELASTIC_QUOTA_PROFILES, p, NS)
        wait_for(lambda: _min_cpu(env) == "6", timeout=30, what="quota follows the new selector")
    finally:
        env.ctrl.stop(timeout=5)


def _min_cpu(env: Env) -> str | None:
    items = env.client.list(ELASTIC_QUOTAS, NS)["items"]
    return items[0]["spec"]["min"]["cpu"] if items else None


# -- the arithmetic, without a server -------------------------------------------------------


def _node(cpu: str, memory: str, **extra: str) -> dict[str, Any]:
    return {"spec": {}, "status": {"allocatable": {"cpu": cpu, "memory": memory, **extra},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def test_sums_keep_the_first_nodes_format_and_print_canonically() -> None:
    total, unschedulable = pool_resources([_node("1500m", "1000", pods="110"),
                                           _node("2", "24", pods="110")])
    # memory "1000" is DecimalSI, so the sum prints as Go would: 1024 → "1024"; cpu → "3500m".
    assert resource_list_json(total) == '{"cpu":"3500m","memory":"1024","pods":"220"}'
    assert resource_list_json(unschedulable) == "{}"


@pytest.mark.parametrize(("ratio", "cpu", "memory"), [
    ("0.5", "1750m", "512"),
    ("1", "3500m", "1Ki"),        # scaling re-formats memory as BinarySI
    ("1.5", "3500m", "1Ki"),      # out of range: counts as 1, still re-formatted
    ("abc", "3500m", "1Ki"),
    ("0.333", "1165m", "340"),    # float64 products truncated to whole milli / units
])
def test_resource_ratio(ratio: str, cpu: str, memory: str) -> None:
    p = ElasticQuotaProfile.model_validate(profile("p", "q", {}, ratio=ratio))
    quota = desired_quota(p, None, [_node("1500m", "1000"), _node("2", "24")], "1")
    assert quota["spec"]["min"] == {"cpu": cpu, "memory": memory}


def test_malformed_resource_keys_fall_back_to_cpu_and_memory(
        caplog: pytest.LogCaptureFixture) -> None:
    p = ElasticQuotaProfile.model_validate(profile(
        "p", "q", {}, annotations={ANNOTATION_RESOURCE_KEYS: "cpu,memory"}))
    quota = desired_quota(p, None, [_node("2", "2Gi")], "1")
    assert quota["spec"]["min"] == {"cpu": "2", "memory": "2Gi"}
    assert f"ElasticQuotaProfile default/p: ignoring annotation {ANNOTATION_RESOURCE_KEYS}" \
        in caplog.text
