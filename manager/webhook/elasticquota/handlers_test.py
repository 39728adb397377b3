"""The ElasticQuota validating webhook checks against the informer-fed tree and never changes
it; a check waits for the informer when the API server already has what the tree lacks."""

from __future__ import annotations

import threading
from typing import Any

from manager.webhook.admission import AdmissionRequest
from manager.webhook.elasticquota.handlers import QuotaMutatingHandler, QuotaValidatingHandler
from manager.webhook.elasticquota.topology import QuotaTopology

Obj = dict[str, Any]


def quota(name: str, min_cpu: str, *, parent: str = "", is_parent: bool = False) -> Obj:
    labels = {"quota.scheduling.koordinator.sh/parent": parent} if parent else {}
    if is_parent:
        labels["quota.scheduling.koordinator.sh/is-parent"] = "true"
    return {"metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"min": {"cpu": min_cpu}, "max": {"cpu": "20"}}}


def review(op: str, obj: Obj | None, old: Obj | None = None) -> AdmissionRequest:
    name = (obj or old or {})["metadata"]["name"]
    return AdmissionRequest(uid="u", operation=op, resource="elasticquotas",
                            group="scheduling.sigs.k8s.io", version="v1alpha1", name=name,
                            namespace="default", object=obj, old_object=old)


def test_admitted_requests_leave_the_tree_as_the_informer_built_it() -> None:
    topo = QuotaTopology()
    handler = QuotaValidatingHandler(topo)
    assert handler(review("CREATE", quota("team-a", "2"))).allowed
    assert topo.get("team-a") is None  # a dry run or a forged review leaves no phantom
    topo.on_add_or_update(quota("team-b", "2"))
    assert handler(review("DELETE", None, quota("team-b", "2"))).allowed
    assert topo.get("team-b") is not None  # gone only when the informer says so
    topo.on_delete(quota("team-b", "2"))
    assert topo.get("team-b") is None


def _stored_and_delivered(topo: QuotaTopology, stored: dict[str, Obj]) -> Any:
    """``exists`` for a quota the API server has stored and whose informer event arrives
    while the check looks it up."""

    def exists(name: str) -> bool:
        obj = stored.get(name)
        if obj is None:
            return False
        threading.Thread(target=topo.on_add_or_update, args=(obj,)).start()
        return True

    return exists


def test_a_child_right_after_its_parent_waits_for_the_informer() -> None:
    topo = QuotaTopology()
    topo.exists = _stored_and_delivered(topo, {"parent": quota("parent", "10", is_parent=True)})
    resp = QuotaValidatingHandler(topo)(review("CREATE", quota("child", "4", parent="parent")))
    assert resp.allowed, resp.message
    assert topo.get("child") is None


def test_a_name_stored_a_moment_ago_is_refused_before_the_tree_has_it() -> None:
    topo = QuotaTopology()
    topo.exists = _stored_and_delivered(topo, {"team-a": quota("team-a", "2")})
    resp = QuotaValidatingHandler(topo)(review("CREATE", quota("team-a", "2")))
    assert not resp.allowed and resp.code == 400
    assert resp.message == "AddQuota quota already exist:team-a"


def test_an_unknown_parent_is_a_client_error_naming_the_label() -> None:
    # Upstream answers 500 "parent not exist"; the user's label is what is wrong.
    resp = QuotaMutatingHandler(QuotaTopology())(
        review("CREATE", quota("orphan", "1", parent="no-such-parent")))
    assert not resp.allowed and resp.code == 400
    assert "orphan" in resp.message
    assert "metadata.labels[quota.scheduling.koordinator.sh/parent]" in resp.message
    assert "'no-such-parent' not found" in resp.message
