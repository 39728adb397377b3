"""ResourceAmplification: the ratio annotation from resource-amplification-config and the
node's CPU normalization ratio, its removal, and when it needs a patch (upstream
`plugins/resourceamplification`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.extension.amplification import ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO
from api.extension.cpu_normalization import ANNOTATION_CPU_NORMALIZATION_RATIO
from manager.slo_controller.noderesource.resourceamplification import (
    ResourceAmplificationPlugin,
)
from manager.slo_controller.noderesource.testing import RATIOS, nrt, run

AMP = ANNOTATION_NODE_RESOURCE_AMPLIFICATION_RATIO


def amplification(config: dict[str, Any] | None, node_ratio: str | None = None,
                  previous: str | None = "{\"cpu\":9.00}",
                  colocation: dict[str, Any] | None = None) -> dict[str, float] | None:
    annotations = {} if previous is None else {AMP: previous}
    if node_ratio is not None:
        annotations[ANNOTATION_CPU_NORMALIZATION_RATIO] = node_ratio
    node = run(None, annotations=annotations, colocation=colocation, amplification=config)
    value = node["metadata"]["annotations"].get(AMP)
    return None if value is None else json.loads(value)


ON = {"enable": True, "resourceAmplificationRatio": {"cpu": 1.5, "memory": 2}}


@pytest.mark.parametrize(("config", "node_ratio", "want"), [
    (ON, None, {"cpu": 1.5, "memory": 2.0}),
    # cpu is multiplied by the normalization ratio already on the node
    (ON, "1.20", {"cpu": 1.8, "memory": 2.0}),
    # amplification off: cpu still carries the normalization ratio
    ({"enable": False, "resourceAmplificationRatio": {"cpu": 1.5}}, "1.20", {"cpu": 1.2}),
    ({"enable": True, "resourceAmplificationRatio": {"memory": 1.25}}, "1.10",
     {"cpu": 1.1, "memory": 1.25}),
    # nothing to amplify: the annotation goes away
    ({"enable": False}, None, None),
    (None, "1.00", None),
    # a ratio below 1 is refused: the annotation goes away rather than shrink the node
    ({"enable": True, "resourceAmplificationRatio": {"memory": 0.5}}, None, None),
    # a malformed normalization ratio on the node: no amplification written
    (ON, "fast", None),
])
def test_ratios(config: dict[str, Any] | None, node_ratio: str | None,
                want: dict[str, float] | None) -> None:
    assert amplification(config, node_ratio) == want


def test_two_decimals_sorted_keys() -> None:
    node = run(None, amplification={"enable": True, "resourceAmplificationRatio": {
        "memory": 1.125, "cpu": 1.333}})
    assert node["metadata"]["annotations"][AMP] == '{"cpu":1.33,"memory":1.12}'


def test_node_configs_override_by_selector() -> None:
    config = {"enable": False, "nodeConfigs": [
        {"name": "amp", "nodeSelector": {"matchLabels": {"pool": "amp"}}, "enable": True,
         "resourceAmplificationRatio": {"cpu": 2}}]}
    node = run(None, labels={"pool": "amp"}, amplification=config)
    assert json.loads(node["metadata"]["annotations"][AMP]) == {"cpu": 2.0}
    assert AMP not in run(None, labels={"pool": "x"}, amplification=config)[
        "metadata"]["annotations"]


def test_colocation_disabled_removes_the_annotation() -> None:
    assert amplification(ON, colocation={"enable": False}) is None


def test_uses_the_ratio_on_the_node_not_the_new_one() -> None:
    # upstream reads the node as cached: a fresh normalization ratio reaches amplification on
    # the next reconcile (the metadata patch triggers it)
    node = run({"enable": True, "ratioModel": RATIOS}, nrt(), amplification=ON)
    assert node["metadata"]["annotations"][ANNOTATION_CPU_NORMALIZATION_RATIO] == "1.10"
    assert json.loads(node["metadata"]["annotations"][AMP]) == {"cpu": 1.5, "memory": 2.0}


def meta(value: str | None) -> dict[str, Any]:
    return {"metadata": {"annotations": {} if value is None else {AMP: value}}}


@pytest.mark.parametrize(("old", "new", "want"), [
    (None, None, False), (None, '{"cpu":1.20}', True), ('{"cpu":1.20}', None, True),
    ('{"cpu":1.20}', '{"cpu":1.20}', False), ('{"cpu":1.20}', '{"cpu":1.30}', True)])
def test_need_sync_meta(old: str | None, new: str | None, want: bool) -> None:
    assert ResourceAmplificationPlugin().need_sync_meta(meta(old), meta(new))[0] is want
