"""CPUNormalization: the ratio annotation from cpu-normalization-config and the NRT's CPU basic
info, batch-cpu scaled by it, and when the annotation needs a patch (upstream
`plugins/cpunormalization`)."""

from __future__ import annotations

from typing import Any

import pytest

from api.extension.cpu_normalization import (
    ANNOTATION_CPU_BASIC_INFO,
    ANNOTATION_CPU_NORMALIZATION_RATIO,
    LABEL_CPU_NORMALIZATION_ENABLED,
)
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from manager.slo_controller.noderesource.cases import G
from manager.slo_controller.noderesource.cpunormalization import CPUNormalizationPlugin
from manager.slo_controller.noderesource.testing import MODEL, RATIOS, nrt, run
from pkg.util.podresources import quantity_int


def ratio(node: dict[str, Any]) -> str | None:
    return node["metadata"]["annotations"].get(ANNOTATION_CPU_NORMALIZATION_RATIO)


def batch_cpu(node: dict[str, Any]) -> int:
    return quantity_int(BATCH_CPU, node["status"]["allocatable"][BATCH_CPU])


@pytest.mark.parametrize(("ht", "turbo", "want"), [
    (False, False, "1.50"), (True, False, "1.10"), (False, True, "1.80"), (True, True, "1.20")])
def test_ratio_by_hyper_threading_and_turbo(ht: bool, turbo: bool, want: str) -> None:
    node = run({"enable": True, "ratioModel": RATIOS}, nrt(ht, turbo))
    assert ratio(node) == want
    # batch-cpu is scaled on its milli value; memory is not touched
    assert batch_cpu(node) == int(25000 * 1000 * float(want)) // 1000
    assert quantity_int(BATCH_MEMORY, node["status"]["capacity"][BATCH_MEMORY]) == 33 * G
    assert node["status"]["capacity"][BATCH_CPU] == node["status"]["allocatable"][BATCH_CPU]


def test_disabled_by_default_writes_one() -> None:
    node = run(None, nrt())
    assert ratio(node) == "1.00"
    assert batch_cpu(node) == 25000


@pytest.mark.parametrize(("enable", "label", "want"), [
    (True, "false", "1.00"), (False, "true", "1.10"), (False, "1", "1.10"), (True, None, "1.10")])
def test_node_label_beats_config(enable: bool, label: str | None, want: str) -> None:
    labels = {LABEL_CPU_NORMALIZATION_ENABLED: label} if label is not None else {}
    node = run({"enable": enable, "ratioModel": RATIOS}, nrt(), labels=labels)
    assert ratio(node) == want


def test_node_configs_override_by_selector() -> None:
    norm = {"enable": False, "ratioModel": RATIOS, "nodeConfigs": [
        {"name": "fast", "nodeSelector": {"matchLabels": {"pool": "fast"}}, "enable": True}]}
    assert ratio(run(norm, nrt(), labels={"pool": "fast"})) == "1.10"
    assert ratio(run(norm, nrt(), labels={"pool": "slow"})) == "1.00"


def test_unknown_model_uses_default_ratio() -> None:
    node = run({"enable": True, "defaultRatio": 1.3, "ratioModel": RATIOS}, nrt(model="EPYC"))
    assert ratio(node) == "1.30"
    assert batch_cpu(node) == 32500


@pytest.mark.parametrize(("norm", "topology", "labels"), [
    ({"enable": True, "ratioModel": RATIOS}, nrt(model="EPYC"), {}),  # no ratio, no default
    ({"enable": True, "ratioModel": {MODEL: {"baseRatio": 2}}}, nrt(), {}),  # state missing
    ({"enable": True, "ratioModel": RATIOS}, None, {}),  # no NodeResourceTopology
    ({"enable": True, "ratioModel": RATIOS}, {"metadata": {"name": "n1"}}, {}),  # no basic info
    ({"enable": True, "ratioModel": RATIOS},
     {"metadata": {"name": "n1", "annotations": {ANNOTATION_CPU_BASIC_INFO: "{"}}}, {}),
    ({"enable": True, "ratioModel": {MODEL: {"hyperThreadEnabledRatio": 6.0}}}, nrt(), {}),
    ({"enable": True, "ratioModel": {MODEL: {"hyperThreadEnabledRatio": 0.5}}}, nrt(), {}),
    ({"enable": True, "ratioModel": RATIOS}, nrt(), {LABEL_CPU_NORMALIZATION_ENABLED: "yes"}),
], ids=["unknown model", "state missing", "no NRT", "no basic info", "bad basic info",
        "ratio above 5", "ratio below 1", "malformed label"])
def test_bad_inputs_keep_the_annotation(norm: dict[str, Any], topology: dict[str, Any] | None,
                                        labels: dict[str, str]) -> None:
    node = run(norm, topology, labels=labels,
               annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: "1.40"})
    assert ratio(node) == "1.40"  # left as it was; nothing crashed
    # the other plugins still ran, and batch-cpu is not scaled by a stale annotation
    assert batch_cpu(node) == 25000


def test_colocation_disabled_keeps_the_ratio() -> None:
    node = run({"enable": True, "ratioModel": RATIOS}, nrt(), colocation={"enable": False},
               annotations={ANNOTATION_CPU_NORMALIZATION_RATIO: "1.40"})
    assert ratio(node) == "1.40"
    assert BATCH_CPU not in node["status"]["allocatable"]


def meta(value: str | None) -> dict[str, Any]:
    annotations = {} if value is None else {ANNOTATION_CPU_NORMALIZATION_RATIO: value}
    return {"metadata": {"annotations": annotations}}


@pytest.mark.parametrize(("old", "new", "want"), [
    (None, None, False), (None, "1.00", True), ("1.20", None, True), ("1.20", "1.205", False),
    ("1.20", "1.25", True), ("bad", "1.20", True), ("1.20", "bad", False)])
def test_need_sync_meta(old: str | None, new: str | None, want: bool) -> None:
    assert CPUNormalizationPlugin().need_sync_meta(meta(old), meta(new))[0] is want
