"""Bad input gets a clear rejection naming the field: slo-controller-config values,
ClusterColocationProfiles, ElasticQuota trees and pod labels/annotations, each through the
handler that guards it (upstream ``pkg/webhook/cm``, ``pod`` and ``elasticquota``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from manager.webhook.admission import AdmissionRequest
from manager.webhook.configmap.validating import ConfigMapValidatingHandler
from manager.webhook.elasticquota.handlers import QuotaValidatingHandler
from manager.webhook.elasticquota.topology import QuotaTopology
from manager.webhook.options import WebhookOptions
from manager.webhook.pod.mutating import PodMutatingHandler
from manager.webhook.pod.validating import PodValidatingHandler
from manager.webhook.server import serve_review
from pkg.client import ApiError
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate

Q = "quota.scheduling.koordinator.sh/"


class FakeClient:
    """Answers the few reads the handlers make from fixed objects."""

    def __init__(self, profiles: Sequence[dict[str, Any]] = (),
                 nodes: Sequence[dict[str, Any]] = ()) -> None:
        self.profiles, self.nodes = list(profiles), list(nodes)

    def list_all(self, resource: Any, namespace: str | None = None, **_: Any) -> dict:
        items = {"clustercolocationprofiles": self.profiles, "nodes": self.nodes}
        return {"items": items.get(resource.plural, [])}

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict:
        if resource.plural == "namespaces":
            return {"metadata": {"name": name, "labels": {}}}
        raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')


def review(op: str, resource: str, obj: dict | None, old: dict | None = None,
           namespace: str = "default") -> AdmissionRequest:
    return AdmissionRequest(uid="u", operation=op, resource=resource, object=obj,
                            old_object=old, namespace=namespace)


def pod(labels: dict | None = None, annotations: dict | None = None,
        requests: dict | None = None, priority: int | None = None) -> dict:
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": {
        "requests": requests or {}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": "p", "namespace": "default", "labels": labels or {},
                         "annotations": annotations or {}}, "spec": spec}


def profile(**spec: Any) -> dict:
    return {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": {"name": "prof"}, "spec": spec}


def quota(name: str, mn: dict, mx: dict, parent: str = "", is_parent: bool = False,
          annotations: dict | None = None) -> dict:
    labels = {Q + "is-parent": "true"} if is_parent else {}
    if parent:
        labels[Q + "parent"] = parent
    return {"metadata": {"name": name, "namespace": "default", "labels": labels,
                         "annotations": annotations or {}},
            "spec": {"min": mn, "max": mx}}


def slo_cm(**data: str) -> dict:
    return {"metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
            "data": data}


GATE = FeatureGate(DEFAULT_FEATURE_GATES)
SEL = {"matchLabels": {"pool": "a"}}

# (case, handler factory, request, expected HTTP code, text the message must contain)
CASES: list[tuple[str, Any, AdmissionRequest, int, str]] = [
    ("colocation-config not JSON", lambda: ConfigMapValidatingHandler(FakeClient()),
     review("CREATE", "configmaps", slo_cm(**{"colocation-config": "{oops"}),
            namespace="koordinator-system"), 400, "ParseConfigFail"),
    ("cpuReclaimThresholdPercent out of range",
     lambda: ConfigMapValidatingHandler(FakeClient()),
     review("CREATE", "configmaps", slo_cm(**{"colocation-config": json.dumps(
         {"enable": True, "cpuReclaimThresholdPercent": -1})}),
         namespace="koordinator-system"), 400, "cpuReclaimThresholdPercent"),
    ("colocation enable is a string", lambda: ConfigMapValidatingHandler(FakeClient()),
     review("CREATE", "configmaps", slo_cm(**{"colocation-config": '{"enable": "yes"}'}),
            namespace="koordinator-system"), 400, "enable"),
    ("node config without nodeSelector", lambda: ConfigMapValidatingHandler(FakeClient()),
     review("CREATE", "configmaps", slo_cm(**{"colocation-config": json.dumps(
         {"nodeConfigs": [{"name": "x", "cpuReclaimThresholdPercent": 50}]})}),
         namespace="koordinator-system"), 400, "nodeConfigs[0].nodeSelector"),
    ("overlapping node strategies", lambda: ConfigMapValidatingHandler(FakeClient()),
     review("CREATE", "configmaps", slo_cm(**{"resource-threshold-config": json.dumps(
         {"nodeStrategies": [{"name": "a", "nodeSelector": SEL},
                             {"name": "b", "nodeSelector": SEL}]})}),
         namespace="koordinator-system"), 400, "NodeStrategiesOverlap"),
    ("existing node matched twice", lambda: ConfigMapValidatingHandler(FakeClient(nodes=[
        {"metadata": {"name": "n1", "labels": {"pool": "a", "zone": "z"}}}])),
     review("CREATE", "configmaps", slo_cm(**{"cpu-burst-config": json.dumps(
         {"nodeStrategies": [{"name": "a", "nodeSelector": SEL},
                             {"name": "b", "nodeSelector": {"matchLabels": {"zone": "z"}}}]})}),
         namespace="koordinator-system"), 400, "ExistNodeConfict"),
    ("profile probability not a percentage",
     lambda: PodMutatingHandler(FakeClient([profile(probability="half")]), GATE),
     review("CREATE", "pods", pod()), 500, "spec.probability"),
    ("profile priorityClassName unknown",
     lambda: PodMutatingHandler(FakeClient([profile(priorityClassName="koord-nope")]), GATE),
     review("CREATE", "pods", pod()), 500, "spec.priorityClassName"),
    ("extended-resource-spec annotation malformed",
     lambda: PodMutatingHandler(FakeClient(), GATE),
     review("CREATE", "pods", pod(annotations={
         "node.koordinator.sh/extended-resource-spec": "{not json"},
         requests={"kubernetes.io/batch-cpu": "1000"})), 500,
     "node.koordinator.sh/extended-resource-spec"),
    ("batch resources without BE", lambda: PodValidatingHandler(FakeClient(), None, GATE),
     review("CREATE", "pods", pod(requests={"kubernetes.io/batch-cpu": "500"})), 400,
     "labels.koordinator.sh/qosClass: Required value"),
    ("BE with prod priority", lambda: PodValidatingHandler(FakeClient(), None, GATE),
     review("CREATE", "pods", pod({"koordinator.sh/qosClass": "BE"}, priority=9500)), 400,
     "koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used in combination"),
    ("LSR with fractional CPUs", lambda: PodValidatingHandler(FakeClient(), None, GATE),
     review("CREATE", "pods", pod({"koordinator.sh/qosClass": "LSR"}, priority=9500,
                                  requests={"cpu": "1500m"})), 400,
     "the requested CPUs of LSR Pod must be integer"),
    ("reserve-pod annotation", lambda: PodValidatingHandler(FakeClient(), None, GATE),
     review("CREATE", "pods", pod(annotations={"scheduling.koordinator.sh/reserve-pod": "x"})),
     400, "annotations.scheduling.koordinator.sh/reserve-pod: Forbidden"),
    ("QoS label changed on update", lambda: PodValidatingHandler(FakeClient(), None, GATE),
     review("UPDATE", "pods", pod({"koordinator.sh/qosClass": "LS"}),
            pod({"koordinator.sh/qosClass": "BE"})), 400,
     "labels.koordinator.sh/qosClass: Invalid value"),
    ("quota min > max", lambda: QuotaValidatingHandler(QuotaTopology()),
     review("CREATE", "elasticquotas", quota("a", {"cpu": "8"}, {"cpu": "4"})), 400,
     "resourceKey cpu of quota a min 8 > max 4"),
    ("quota negative max", lambda: QuotaValidatingHandler(QuotaTopology()),
     review("CREATE", "elasticquotas", quota("a", {}, {"cpu": "-1"})), 400,
     "a quota.Spec.Max's value < 0, in dimensions :[cpu]"),
    ("quota parent missing", lambda: QuotaValidatingHandler(QuotaTopology()),
     review("CREATE", "elasticquotas", quota("a", {}, {"cpu": "4"}, parent="nope")), 400,
     "a has parentName nope but the parent doesn't exist"),
]


@pytest.mark.parametrize(("case", "make", "req", "code", "text"), CASES,
                         ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_a_clear_message(case: str, make: Any, req: AdmissionRequest,
                                                    code: int, text: str) -> None:
    resp = make()(req)
    assert not resp.allowed, case
    assert resp.code == code
    assert text in resp.message


def _tree() -> QuotaTopology:
    topo = QuotaTopology()  # fed as the informer feeds it
    topo.on_add_or_update(quota("parent", {"cpu": "10"}, {"cpu": "20"}, is_parent=True))
    topo.on_add_or_update(quota("child-a", {"cpu": "6"}, {"cpu": "20"}, parent="parent"))
    return topo


@pytest.mark.parametrize(("new", "text"), [
    (quota("child-b", {"cpu": "5"}, {"cpu": "20"}, parent="parent"),
     "checkMinQuotaSum allChildren SumMinQuota > parentMinQuota, parent: parent"),
    (quota("child-b", {}, {"cpu": "20", "memory": "1Gi"}, parent="parent"),
     "checkMaxQuotaKeySame failed"),
    (quota("child-b", {}, {"cpu": "20"}, parent="child-a"),
     "the parentQuotaInfo's IsParent is false"),
    (quota("child-a", {}, {"cpu": "20"}, parent="parent"), "AddQuota quota already exist:child-a"),
])
def test_quota_tree_rules(new: dict, text: str) -> None:
    resp = QuotaValidatingHandler(_tree())(review("CREATE", "elasticquotas", new))
    assert not resp.allowed and resp.code == 400
    assert text in resp.message


def test_quota_tree_delete_and_update_rules() -> None:
    topo = _tree()
    handler = QuotaValidatingHandler(topo)
    parent = quota("parent", {"cpu": "10"}, {"cpu": "20"}, is_parent=True)
    resp = handler(review("DELETE", "elasticquotas", None, parent))
    assert resp.message == "delete quota failed, quota parent has 1 child quotas"
    demoted = quota("parent", {"cpu": "10"}, {"cpu": "20"})
    resp = handler(review("UPDATE", "elasticquotas", demoted, parent))
    assert "quota has children, isParent is forbidden to modify as false" in resp.message
    ok = quota("child-b", {"cpu": "4"}, {"cpu": "20"}, parent="parent")
    assert handler(review("CREATE", "elasticquotas", ok)).allowed


def test_good_config_and_pods_pass() -> None:
    cm = ConfigMapValidatingHandler(FakeClient(), WebhookOptions())
    good = slo_cm(**{"colocation-config": json.dumps(
        {"enable": True, "cpuReclaimThresholdPercent": 60,
         "nodeConfigs": [{"name": "a", "nodeSelector": SEL, "cpuReclaimThresholdPercent": 50}]})})
    assert cm(review("CREATE", "configmaps", good, namespace="koordinator-system")).allowed
    validating = PodValidatingHandler(FakeClient(), None, GATE)
    be = pod({"koordinator.sh/qosClass": "BE"}, priority=5000,
             requests={"kubernetes.io/batch-cpu": "500"})
    assert validating(review("CREATE", "pods", be)).allowed


@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_a_forged_review_nested_too_deep_is_answered_not_crashed(depth: int) -> None:
    # 100,000 levels (600 KB) crashed the process inside the JSON parser.
    body = b'{"request":' * depth + b"{}" + b"}" * depth
    code, out = serve_review(PodValidatingHandler(FakeClient(), None, GATE), body)
    resp = json.loads(out)["response"]
    assert code == 200 and not resp["allowed"] and resp["status"]["code"] == 400
    assert "cannot decode AdmissionReview: nested more than 1000 levels deep" in \
        resp["status"]["message"]
