"""ElasticQuota and PodGroup (scheduling.sigs.k8s.io): round trips and CRD facts."""

from __future__ import annotations

from typing import Any

from api.thirdparty.schedulerplugins.v1alpha1 import ElasticQuota, PodGroup

QUOTA: dict[str, Any] = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "ElasticQuota",
    "metadata": {"name": "team-a", "namespace": "team-a",
                 "labels": {"quota.scheduling.koordinator.sh/parent": "koordinator-root-quota"}},
    "spec": {"min": {"cpu": "10", "memory": "20Gi"}, "max": {"cpu": "20", "memory": "40Gi"}},
    "status": {"used": {"cpu": "2500m"}},
}

GROUP = {
    "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
    "kind": "PodGroup",
    "metadata": {"name": "gang-a", "namespace": "default"},
    "spec": {"minMember": 3, "minResources": {"cpu": "3"}, "scheduleTimeoutSeconds": 60},
    "status": {"phase": "Scheduling", "occupiedBy": "job-uid", "scheduled": 1, "running": 0,
               "scheduleStartTime": "2024-03-05T08:00:00Z"},
}


def test_elastic_quota_round_trips() -> None:
    quota = ElasticQuota.model_validate({**QUOTA, "spec": {"min": {"cpu": 10, "memory": "20Gi"},
                                                           "max": QUOTA["spec"]["max"]}})
    assert quota.to_dict() == QUOTA


def test_pod_group_round_trips() -> None:
    assert PodGroup.model_validate(GROUP).to_dict() == GROUP


def test_crd_facts() -> None:
    for kind in (ElasticQuota, PodGroup):
        assert kind.namespaced and not kind.status_subresource
        assert kind.crd_annotations == {
            "api-approved.kubernetes.io":
            "https://github.com/kubernetes-sigs/scheduler-plugins/pull/52"}
    assert PodGroup.crd_name() == "podgroups.scheduling.sigs.k8s.io"
