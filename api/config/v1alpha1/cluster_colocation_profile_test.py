"""ClusterColocationProfile: upstream's example round-trips; qosClass is checked and always
written; patch is kept verbatim."""

from __future__ import annotations

import pytest

from api.config.v1alpha1.cluster_colocation_profile import (
    ClusterColocationProfile,
    ClusterColocationProfileSpec,
)
from api.loader import load_object, load_yaml_documents
from api.testing import json_differences
from pkg.util.testdata import upstream_data_dir


def test_upstream_example_round_trips() -> None:
    path = upstream_data_dir() / "examples/spark-jobs/cluster-colocation-profile.yaml"
    docs = [d for d in load_yaml_documents(path.read_text())
            if d.get("kind") == "ClusterColocationProfile"]
    assert len(docs) == 1
    profile = load_object(docs[0])
    assert isinstance(profile, ClusterColocationProfile)
    assert json_differences(docs[0], profile.to_dict()) == []
    assert profile.spec.qos_class == "BE"
    assert profile.spec.koordinator_priority == 1000


def test_qos_class_and_priority_class_are_always_written() -> None:
    assert ClusterColocationProfileSpec().to_dict() == {"qosClass": "", "priorityClassName": ""}


@pytest.mark.parametrize("qos", ["LSE", "LSR", "LS", "BE", "SYSTEM", ""])
def test_known_qos_classes_load(qos: str) -> None:
    assert ClusterColocationProfileSpec(qos_class=qos).qos_class == qos


def test_unknown_qos_class_is_rejected() -> None:
    with pytest.raises(ValueError, match="BestEffort"):
        ClusterColocationProfileSpec.model_validate({"qosClass": "BestEffort"})


def test_probability_patch_and_mappings_round_trip() -> None:
    spec = {
        "qosClass": "LS", "priorityClassName": "koord-prod", "probability": "50%",
        "labelKeysMapping": {"old": "new"}, "annotationKeysMapping": {"a": "b"},
        "labelSuffixes": {"tier": "-batch"},
        "patch": {"spec": {"tolerations": [{"key": "x", "operator": "Exists"}],
                           "nodeSelector": None}},
    }
    parsed = ClusterColocationProfileSpec.model_validate(spec)
    assert parsed.to_dict() == spec  # the null inside the patch is a deletion: kept
    assert ClusterColocationProfileSpec.model_validate({"probability": 30}).probability == 30
