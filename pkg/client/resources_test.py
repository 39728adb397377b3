"""REST paths of built-in kinds and of Koordinator CRD models."""

from __future__ import annotations

import pytest

from api.meta import ObjectMeta, registered_kinds
from api.slo.v1alpha1 import NodeMetric
from pkg.client import resources
from pkg.client.resources import Resource


def test_paths_of_core_group_and_named_groups() -> None:
    assert resources.PODS.path() == "/api/v1/pods"
    assert resources.PODS.path("kube-system") == "/api/v1/namespaces/kube-system/pods"
    assert resources.PODS.path("ns", "p-1", "status") == "/api/v1/namespaces/ns/pods/p-1/status"
    assert resources.NODES.path("ignored", "n1") == "/api/v1/nodes/n1"
    assert resources.LEASES.path("kube-system", "koord-scheduler") == \
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/koord-scheduler"
    with pytest.raises(ValueError):
        resources.PODS.path("ns", "")


def test_for_model_and_lookup_by_kind() -> None:
    r = Resource.for_model(NodeMetric)
    assert r.gvr == ("slo.koordinator.sh", "v1alpha1", "nodemetrics")
    assert not r.namespaced and r.model is NodeMetric
    assert r.path(name="n1") == "/apis/slo.koordinator.sh/v1alpha1/nodemetrics/n1"
    assert resources.for_kind("slo.koordinator.sh/v1alpha1", "NodeMetric") == r
    assert resources.for_kind("v1", "Pod") is resources.PODS
    assert resources.for_kind("example.com/v1", "Nope") is None
    assert resources.for_object({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}) \
        is resources.LEASES
    assert resources.for_object(NodeMetric(metadata=ObjectMeta(name="n"))) == r


def test_every_modelled_kind_has_one_resource() -> None:
    """Each Koordinator CRD is declared here once (all served versions share one plural)."""
    import api.all_kinds  # noqa: F401  (registers every kind)

    declared = [(r.group, r.kind) for r in vars(resources).values()
                if isinstance(r, Resource) and r.model is not None]
    assert sorted(declared) == sorted({(g, k) for g, _, k in registered_kinds()})
