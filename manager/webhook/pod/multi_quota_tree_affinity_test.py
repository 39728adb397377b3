"""MultiQuotaTree node affinity: upstream's TestAddNodeAffinityForMultiQuotaTree cases, and the
admission answer with the gate on and off."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from api.extension.elastic_quota import (
    ANNOTATION_QUOTA_NAMESPACES,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_NAME,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
)
from manager.webhook.admission import AdmissionRequest
from manager.webhook.elasticquota.topology import QuotaTopology
from manager.webhook.pod.multi_quota_tree_affinity import add_node_affinity_for_multi_quota_tree
from manager.webhook.pod.mutating import PodMutatingHandler
from pkg.client import ApiError, Resource
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate
from pkg.features.features import MULTI_QUOTA_TREE

Obj = dict[str, Any]


def profile(name: str, tree: str, pool: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "kube-system",
                         "labels": {LABEL_QUOTA_TREE_ID: tree}},
            "spec": {"quotaName": f"root-{name}",
                     "nodeSelector": {"matchLabels": {"node-pool": pool}}}}


def quota(name: str, namespace: str = "kube-system", *, tree: str = "", parent: str = "",
          is_parent: bool = False, namespaces: str = "") -> Obj:
    labels = {}
    if tree:
        labels[LABEL_QUOTA_TREE_ID] = tree
    if parent:
        labels[LABEL_QUOTA_PARENT] = parent
    if is_parent:
        labels[LABEL_QUOTA_IS_PARENT] = "true"
    annotations = {ANNOTATION_QUOTA_NAMESPACES: namespaces} if namespaces else {}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": annotations},
            "spec": {"min": {"cpu": "0"}, "max": {"cpu": "100"}}}


class Reader:
    """The cached reader: ElasticQuotaProfiles, and no ClusterColocationProfile."""

    def __init__(self, profiles: list[Obj]) -> None:
        self.profiles = profiles

    def list_all(self, resource: Resource) -> Obj:
        items = self.profiles if resource.plural == "elasticquotaprofiles" else []
        return {"items": copy.deepcopy(items)}

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')


@pytest.fixture
def topology() -> QuotaTopology:
    topo = QuotaTopology()  # fed as the ElasticQuota informer feeds it
    for q in (quota("other-quota"),
              quota("root-quota-a", tree="tree1", is_parent=True),
              quota("root-quota-a-child1", tree="tree1", parent="root-quota-a"),
              quota("namespace1", "namespace1", tree="tree1", parent="root-quota-a"),
              quota("root-quota-b", tree="tree2", is_parent=True,
                    namespaces='["namespace2"]'),
              quota("root-quota-b-child1", tree="tree2", parent="root-quota-b")):
        topo.on_add_or_update(q)
    return topo


READER = Reader([profile("profileA", "tree1", "nodePoolA"),
                 profile("profileB", "tree2", "nodePoolB")])


def pool(value: str) -> Obj:
    return {"key": "node-pool", "operator": "In", "values": [value]}


def pod(namespace: str = "default", quota_name: str = "", affinity: Obj | None = None) -> Obj:
    labels = {LABEL_QUOTA_NAME: quota_name} if quota_name else {}
    spec: Obj = {"affinity": affinity} if affinity else {}
    return {"metadata": {"name": "test-pod-1", "namespace": namespace, "labels": labels},
            "spec": spec}


def required(*exprs: Obj) -> Obj:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]}}}


ZONE = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["cn-hangzhou-a"]}


@pytest.mark.parametrize(("name", "given", "affinity"), [
    ("no quota label", pod(), None),
    ("no quota profile", pod(quota_name="other-quota"), None),
    ("add node affinity", pod(quota_name="root-quota-a-child1"), required(pool("nodePoolA"))),
    ("append node affinity", pod(quota_name="root-quota-a-child1", affinity=required(ZONE)),
     required(ZONE, pool("nodePoolA"))),
    ("multi quotas", pod(quota_name="root-quota-b-child1"), required(pool("nodePoolB"))),
    ("namespace quota", pod("namespace1"), required(pool("nodePoolA"))),
    ("namespace bound by annotation", pod("namespace2"), required(pool("nodePoolB"))),
])
def test_upstream_cases(topology: QuotaTopology, name: str, given: Obj,
                        affinity: Obj | None) -> None:
    add_node_affinity_for_multi_quota_tree(topology, READER, given)
    assert given["spec"].get("affinity") == affinity, name


def test_match_expressions_are_kept_and_every_term_gets_the_pool(
        topology: QuotaTopology) -> None:
    reader = Reader([{"metadata": {"name": "p", "labels": {LABEL_QUOTA_TREE_ID: "tree1"}},
                      "spec": {"nodeSelector": {"matchExpressions": [
                          {"key": "pool", "operator": "Exists"}]}}}])
    given = pod(quota_name="root-quota-a-child1", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [ZONE]}, {"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}})
    add_node_affinity_for_multi_quota_tree(topology, reader, given)
    terms = given["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    exists = {"key": "pool", "operator": "Exists"}
    assert terms[0]["matchExpressions"] == [ZONE, exists]
    assert terms[1]["matchExpressions"] == [exists]
    assert terms[1]["matchFields"][0]["values"] == ["n1"]


@pytest.mark.parametrize("enabled", [True, False])
def test_admission_patches_only_under_the_gate(topology: QuotaTopology, enabled: bool) -> None:
    gate = FeatureGate(DEFAULT_FEATURE_GATES)
    gate.set(f"{MULTI_QUOTA_TREE}={str(enabled).lower()}")
    handler = PodMutatingHandler(READER, gate, topology=topology)
    req = AdmissionRequest(uid="u", operation="CREATE", resource="pods",
                           object=pod(quota_name="root-quota-b-child1"), namespace="default")
    resp = handler(req)
    assert resp.allowed
    affinity_ops = [op for op in resp.patch if op["path"].startswith("/spec/affinity")]
    if enabled:
        assert affinity_ops == [{"op": "add", "path": "/spec/affinity",
                                 "value": required(pool("nodePoolB"))}]
    else:
        assert affinity_ops == []
