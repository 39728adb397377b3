"""The quota tree's feeder: a deleted ElasticQuota's pods fall back to the default quota with
their use, and a quota created again takes them back (upstream ``OnQuotaDelete`` and
``migrateDefaultQuotaGroupsPod``)."""

from __future__ import annotations

import pytest

from api.extension.elastic_quota import DEFAULT_QUOTA_NAME
from scheduler.plugins.elasticquota.core import GroupQuotaManager
from scheduler.plugins.elasticquota.handlers import QuotaTreeFeeder
from scheduler.plugins.elasticquota.testing import make_quota, make_quota_pod

NODE = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "10"}}}


@pytest.fixture
def feeder() -> QuotaTreeFeeder:
    f = QuotaTreeFeeder(GroupQuotaManager({}, {"cpu": 100_000}), None)
    f.manager.on_node_add(NODE)
    f.on_quota_add(make_quota("parent", {"cpu": "10"}, is_parent=True))
    f.on_quota_add(make_quota("team", {"cpu": "10"}, parent="parent"))
    return f


def used(f: QuotaTreeFeeder, name: str) -> int:
    info = f.manager.get_quota_info(name)
    assert info is not None, name
    return info.used.get("cpu", 0)


def test_a_deleted_quota_hands_its_pods_and_their_use_to_the_default_quota(
        feeder: QuotaTreeFeeder) -> None:
    running = make_quota_pod("running", "team", cpu="2", node="n1")
    pending = make_quota_pod("pending", "team", cpu="1")
    feeder.on_pod_add(running)
    feeder.on_pod_add(pending)
    assert (used(feeder, "team"), used(feeder, "parent")) == (2000, 2000)

    feeder.on_quota_delete(make_quota("team", {"cpu": "10"}, parent="parent"))
    assert feeder.manager.get_quota_info("team") is None
    assert feeder.quota_of(running) == feeder.quota_of(pending) == DEFAULT_QUOTA_NAME
    assert (used(feeder, DEFAULT_QUOTA_NAME), used(feeder, "parent")) == (2000, 0)
    default = feeder.manager.get_quota_info(DEFAULT_QUOTA_NAME)
    assert default is not None and default.request["cpu"] == 3000
    # Its pods' later events reach the default quota.
    feeder.on_pod_delete(running)
    assert used(feeder, DEFAULT_QUOTA_NAME) == 0

    # Created again, it takes back the pods that name it.
    feeder.on_pod_update(pending, bound := {**pending, "spec": {**pending["spec"],
                                                                "nodeName": "n1"}})
    assert used(feeder, DEFAULT_QUOTA_NAME) == 1000
    feeder.on_quota_add(make_quota("team", {"cpu": "10"}, parent="parent"))
    assert feeder.quota_of(bound) == "team"
    assert (used(feeder, "team"), used(feeder, "parent")) == (1000, 1000)
    assert used(feeder, DEFAULT_QUOTA_NAME) == 0


def test_a_reserved_pod_keeps_its_use_when_its_quota_goes_and_comes_back(
        feeder: QuotaTreeFeeder) -> None:
    # Reserved by the scheduler (waiting at Permit or binding): no nodeName yet.
    pod = make_quota_pod("assumed", "team", cpu="3")
    feeder.on_pod_add(pod)
    feeder.manager.reserve_pod("team", pod)
    assert used(feeder, "team") == 3000
    feeder.on_quota_delete(make_quota("team", {"cpu": "10"}, parent="parent"))
    assert used(feeder, DEFAULT_QUOTA_NAME) == 3000
    feeder.on_quota_add(make_quota("team", {"cpu": "10"}, parent="parent"))
    assert (used(feeder, "team"), used(feeder, DEFAULT_QUOTA_NAME)) == (3000, 0)
    # Its Unreserve (the binding failed) gives it back where it is now.
    feeder.manager.unreserve_pod(feeder.quota_of(pod), pod)
    assert (used(feeder, "team"), used(feeder, "parent")) == (0, 0)
