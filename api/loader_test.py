"""load_object and load_yaml_documents: the right model, and errors that say what to fix."""

from __future__ import annotations

import pytest

from api.loader import (
    ObjectLoadError,
    UnknownKindError,
    field_path,
    kind_for,
    load_object,
    load_yaml_documents,
    load_yaml_objects,
)
from api.scheduling.v1alpha1 import Reservation
from api.thirdparty.noderesourcetopology import v1alpha1 as nrt_v1alpha1
from api.thirdparty.noderesourcetopology import v1alpha2 as nrt_v1alpha2

MULTI = """
---
# only a comment
---
apiVersion: scheduling.koordinator.sh/v1alpha1
kind: Reservation
metadata:
  name: r1
  creationTimestamp: 2024-03-05T08:00:00Z
spec:
  owners:
  - object: {name: web-0}
---
---
apiVersion: topology.node.k8s.io/v1alpha2
kind: NodeResourceTopology
metadata: {name: node-a}
zones: []
"""


def test_multi_document_yaml_skips_empty_documents() -> None:
    docs = load_yaml_documents(MULTI)
    assert [d["kind"] for d in docs] == ["Reservation", "NodeResourceTopology"]
    # Timestamps stay strings, as Kubernetes' YAML reader leaves them.
    assert docs[0]["metadata"]["creationTimestamp"] == "2024-03-05T08:00:00Z"
    assert load_yaml_documents("") == []


def test_model_is_chosen_by_api_version_and_kind() -> None:
    first, second = load_yaml_objects(MULTI)
    assert isinstance(first, Reservation)
    assert isinstance(second, nrt_v1alpha2.NodeResourceTopology)
    assert kind_for("topology.node.k8s.io/v1alpha1", "NodeResourceTopology") is (
        nrt_v1alpha1.NodeResourceTopology)
    assert kind_for("v1", "Pod") is None


def test_unknown_kind_names_api_version_and_kind() -> None:
    with pytest.raises(UnknownKindError) as err:
        load_object({"apiVersion": "scheduling.koordinator.sh/v1beta1", "kind": "Reservation",
                     "metadata": {"name": "r1"}})
    message = str(err.value)
    assert "'Reservation'" in message and "'scheduling.koordinator.sh/v1beta1'" in message
    assert "r1" in message
    assert (err.value.api_version, err.value.kind) == (
        "scheduling.koordinator.sh/v1beta1", "Reservation")


def test_validation_error_names_the_object_and_the_field() -> None:
    with pytest.raises(ObjectLoadError) as err:
        load_object({
            "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
            "metadata": {"name": "r1"},
            "spec": {"owners": [{"object": {"name": "a"}}, {"controller": {"name": "rs"}}],
                     "ttl": "a day"},
            "status": {"allocatable": {"koordinator.sh/gpu-core": "lots"}},
        })
    error = err.value
    assert error.name == "r1" and error.kind == "Reservation"
    paths = [path for path, _ in error.problems]
    assert "spec.owners[1].controller.uid" in paths
    assert "spec.ttl" in paths
    assert 'status.allocatable["koordinator.sh/gpu-core"]' in paths
    message = str(error)
    assert message.startswith("invalid Reservation r1 (scheduling.koordinator.sh/v1alpha1): ")
    assert "spec.ttl: 'a day' is not a Go duration" in message


def test_namespaced_objects_are_named_with_their_namespace() -> None:
    with pytest.raises(ObjectLoadError, match="invalid Recommendation default/rec"):
        load_object({"apiVersion": "analysis.koordinator.sh/v1alpha1", "kind": "Recommendation",
                     "metadata": {"name": "rec", "namespace": "default"},
                     "spec": {"target": {"type": 7}}})


@pytest.mark.parametrize(("data", "expected"), [
    ([], "expected an object"),
    ({"kind": "Reservation", "metadata": {"name": "r"}}, "object r has no apiVersion"),
    ({"apiVersion": "scheduling.koordinator.sh/v1alpha1"}, "<unnamed>"),
])
def test_malformed_objects(data: object, expected: str) -> None:
    with pytest.raises(ObjectLoadError, match=expected):
        load_object(data)  # type: ignore[arg-type]  # malformed on purpose


def test_field_path() -> None:
    assert field_path(("spec", "owners", 0, "object")) == "spec.owners[0].object"
    assert field_path(("status", "allocatable", "cpu")) == "status.allocatable.cpu"
    assert field_path(("metadata", "labels", "a/b")) == 'metadata.labels["a/b"]'
    assert field_path(()) == "<object>"
