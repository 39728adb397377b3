"""Recommendation: upstream's sample round-trips."""

from __future__ import annotations

from api.analysis.v1alpha1.recommendation import Recommendation, RecommendationTarget
from api.loader import load_object, load_yaml_documents
from api.testing import json_differences
from pkg.util.testdata import upstream_data_dir


def test_upstream_sample_round_trips() -> None:
    path = upstream_data_dir() / "config/samples/analysis_v1aplha1_recommendation.yaml"
    (doc,) = load_yaml_documents(path.read_text())
    recommendation = load_object(doc)
    assert isinstance(recommendation, Recommendation)
    assert json_differences(doc, recommendation.to_dict()) == []
    status = recommendation.status
    assert status is not None and status.pod_status is not None
    assert status.pod_status.container_statuses is not None
    assert status.pod_status.container_statuses[0].resources == {"cpu": "1200m",
                                                                 "memory": "1280Mi"}


def test_target_type_is_always_written() -> None:
    assert RecommendationTarget().to_dict() == {"type": ""}
    assert RecommendationTarget.model_validate(
        {"type": "podSelector", "podSelector": {"matchLabels": {"app": "web"}}}
    ).to_dict() == {"type": "podSelector", "podSelector": {"matchLabels": {"app": "web"}}}


def test_kind_facts() -> None:
    assert Recommendation.short_names == ("recom",)
    assert [c["name"] for c in Recommendation.printer_columns] == [
        "Age", "Type", "Kind", "Name", "LastUpdateTime"]
