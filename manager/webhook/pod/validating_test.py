"""The pod validating webhook: upstream's ClusterColocationProfile cases
(``pkg/webhook/pod/validating/cluster_colocation_profile_test.go``) with their exact reasons,
and admission warnings for the label values upstream silently ignores."""

from __future__ import annotations

from typing import Any

import pytest

from api.extension.priority import (
    PRIORITY_BATCH_VALUE_MAX,
    PRIORITY_BATCH_VALUE_MIN,
    PRIORITY_FREE_VALUE_MAX,
    PRIORITY_MID_VALUE_MAX,
    PRIORITY_PROD_VALUE_MAX,
)
from manager.webhook.admission import AdmissionRequest
from manager.webhook.pod.validating import PodValidatingHandler
from pkg.client import Resource
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate

Obj = dict[str, Any]
QOS, PRIORITY = "koordinator.sh/qosClass", "koordinator.sh/priority"


class NoReads:
    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        raise AssertionError("pod validation reads nothing")

    def list_all(self, resource: Resource) -> Obj:
        raise AssertionError("pod validation reads nothing")


HANDLER = PodValidatingHandler(NoReads(), None, FeatureGate(DEFAULT_FEATURE_GATES))


def pod(labels: dict[str, str] | None = None, priority: int | None = None,
        requests: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "resources": {"requests": requests or {}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": "p", "namespace": "default", "labels": labels or {}},
            "spec": spec}


def request(new: Obj, old: Obj | None = None) -> AdmissionRequest:
    return AdmissionRequest(uid="u", operation="UPDATE" if old else "CREATE", resource="pods",
                            object=new, old_object=old, namespace="default")


BATCH = {"kubernetes.io/batch-cpu": "1", "kubernetes.io/batch-memory": "4Gi"}
ONE_CPU = {"cpu": "1"}

# (upstream's case name, new pod, old pod, the reason; "" = allowed)
UPSTREAM: list[tuple[str, Obj, Obj | None, str]] = [
    ("non-colocation empty pod", pod(), None, ""),
    ("validate immutable QoS", pod({QOS: "LS"}), pod({QOS: "BE"}),
     'labels.koordinator.sh/qosClass: Invalid value: "LS": field is immutable'),
    ("validate remove QoS", pod(), pod({QOS: "BE"}),
     'labels.koordinator.sh/qosClass: Invalid value: "": field is immutable'),
    ("validate defined QoS", pod({QOS: "BE"}, PRIORITY_BATCH_VALUE_MIN, BATCH), None, ""),
    ("forbidden not defined QoS", pod(priority=6666, requests=BATCH), None,
     "labels.koordinator.sh/qosClass: Required value: must specify koordinator QoS BE with "
     "koordinator colocation resources"),
    ("validate immutable priorityClass", pod(priority=PRIORITY_PROD_VALUE_MAX),
     pod(priority=PRIORITY_BATCH_VALUE_MIN),
     'spec.priority: Invalid value: "koord-prod": field is immutable'),
    ("validate remove priorityClass", pod(), pod(priority=PRIORITY_BATCH_VALUE_MIN),
     'spec.priority: Invalid value: "": field is immutable'),
    ("validate koordinator priority", pod({PRIORITY: "8888"}), pod({PRIORITY: "9999"}),
     'labels.koordinator.sh/priority: Invalid value: "8888": field is immutable'),
    ("validate remove koordinator priority", pod(), pod({PRIORITY: "9999"}),
     'labels.koordinator.sh/priority: Invalid value: "": field is immutable'),
    ("allowed QoS and priorityClass combination: BE And NonProd",
     pod({QOS: "BE"}, PRIORITY_BATCH_VALUE_MIN), None, ""),
    ("allowed QoS and priorityClass combination: LSR And Prod",
     pod({QOS: "LSR"}, PRIORITY_PROD_VALUE_MAX, ONE_CPU), None, ""),
    ("forbidden QoS and priorityClass combination: BE And Prod",
     pod({QOS: "BE"}, PRIORITY_PROD_VALUE_MAX), None,
     "Pod: Forbidden: koordinator.sh/qosClass=BE and priorityClass=koord-prod cannot be used "
     "in combination"),
    ("forbidden QoS and priorityClass combination: LSR And Batch",
     pod({QOS: "LSR"}, PRIORITY_BATCH_VALUE_MAX, ONE_CPU), None,
     "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-batch cannot be used "
     "in combination"),
    ("forbidden QoS and priorityClass combination: LSR And Mid",
     pod({QOS: "LSR"}, PRIORITY_MID_VALUE_MAX, ONE_CPU), None,
     "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-mid cannot be used "
     "in combination"),
    ("forbidden QoS and priorityClass combination: LSR And Free",
     pod({QOS: "LSR"}, PRIORITY_FREE_VALUE_MAX, ONE_CPU), None,
     "Pod: Forbidden: koordinator.sh/qosClass=LSR and priorityClass=koord-free cannot be used "
     "in combination"),
    ("validate resources - LSR And Prod",
     pod({QOS: "LS"}, PRIORITY_PROD_VALUE_MAX, {"cpu": "1", "memory": "4Gi"}), None, ""),
    ("forbidden resources - LSR And Prod: unset CPUs",
     pod({QOS: "LSR"}, PRIORITY_PROD_VALUE_MAX, {"memory": "0Gi"}), None,
     "pod.spec.containers[*].resources.requests: Required value: LSR Pod must declare the "
     "requested CPUs"),
    ("forbidden resources - LSR And Prod: non-integer CPUs",
     pod({QOS: "LSR"}, PRIORITY_PROD_VALUE_MAX, {"cpu": "100m", "memory": "0Gi"}), None,
     'pod.spec.containers[*].resources.requests: Invalid value: "100m": the requested CPUs of '
     "LSR Pod must be integer"),
]


@pytest.mark.parametrize(("case", "new", "old", "reason"), UPSTREAM, ids=[c[0] for c in UPSTREAM])
def test_upstream_cluster_colocation_profile_cases(case: str, new: Obj, old: Obj | None,
                                                   reason: str) -> None:
    resp = HANDLER(request(new, old))
    assert resp.allowed is (reason == ""), case
    assert resp.message == reason
    assert resp.code == (400 if reason else 200)
    assert resp.warnings == []


def test_bogus_qos_class_and_priority_are_admitted_with_warnings() -> None:
    resp = HANDLER(request(pod({QOS: "bogus", PRIORITY: "notanumber",
                                "koordinator.sh/priority-class": "koord-gold"})))
    assert resp.allowed
    assert resp.warnings == [
        'metadata.labels[koordinator.sh/qosClass]: "bogus" is not a Koordinator QoS class '
        '(supported values: "LSE", "LSR", "LS", "BE", "SYSTEM"); the pod is treated as having '
        "none",
        'metadata.labels[koordinator.sh/priority-class]: "koord-gold" is not a Koordinator '
        'priority class (supported values: "koord-prod", "koord-mid", "koord-batch", '
        '"koord-free"); the pod is treated as having none',
        'metadata.labels[koordinator.sh/priority]: "notanumber" is not a 32-bit integer; the '
        "label is ignored",
    ]
    review = resp.to_review("u")
    assert review["response"]["warnings"] == resp.warnings


def test_a_rejected_pod_still_gets_its_warnings() -> None:
    # A bogus QoS is no QoS: batch resources then need BE, as upstream.
    resp = HANDLER(request(pod({QOS: "bogus"}, requests=BATCH)))
    assert not resp.allowed
    assert resp.message.startswith("labels.koordinator.sh/qosClass: Required value")
    assert len(resp.warnings) == 1 and '"bogus"' in resp.warnings[0]


def test_valid_labels_have_no_warnings() -> None:
    resp = HANDLER(request(pod({QOS: "BE", PRIORITY: "1000"}, PRIORITY_BATCH_VALUE_MIN)))
    assert resp.allowed and resp.warnings == []
    assert "warnings" not in resp.to_review("u")["response"]
