"""Test helpers shared by the CPUNormalization and ResourceAmplification tests: upstream's
worked example run through the calculator under given slo-controller-config keys."""

from __future__ import annotations

import json
from typing import Any

from api.configuration.slo_controller_config import parse_slo_controller_config
from api.extension.cpu_normalization import ANNOTATION_CPU_BASIC_INFO
from manager.slo_controller.noderesource import calculator, inputs
from manager.slo_controller.noderesource.cases import CASES
from manager.slo_controller.noderesource.cases_fixtures import metric_status, node_obj, pod_objs
from manager.slo_controller.noderesource.framework import PluginInputs

NOW = 1_800_000_000.0
BASE = CASES[0]  # upstream's worked example: batch-cpu 25000, batch-memory 33G
MODEL = "Intel(R) Xeon(R) Platinum 8269CY CPU @ 2.50GHz"
RATIOS = {MODEL: {"baseRatio": 1.5, "hyperThreadEnabledRatio": 1.1, "turboEnabledRatio": 1.8,
                  "hyperThreadTurboEnabledRatio": 1.2}}


def nrt(ht: bool = True, turbo: bool = False, model: str = MODEL) -> dict[str, Any]:
    info = {"cpuModel": model, "hyperThreadEnabled": ht, "turboEnabled": turbo}
    return {"metadata": {"name": "n1", "annotations": {ANNOTATION_CPU_BASIC_INFO:
                                                        json.dumps(info)}}}


def run(norm: dict[str, Any] | None, topology: dict[str, Any] | None = None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        colocation: dict[str, Any] | None = None,
        amplification: dict[str, Any] | None = None) -> dict[str, Any]:
    """The node as prepared for upstream's worked example under the given configs."""
    data = {"colocation-config": json.dumps(colocation or BASE.config)}
    if amplification is not None:
        data["resource-amplification-config"] = json.dumps(amplification)
    if norm is not None:
        data["cpu-normalization-config"] = json.dumps(norm)
    config = parse_slo_controller_config(data)
    node = node_obj(BASE, "n1")
    node["metadata"]["labels"].update(labels or {})
    node["metadata"]["annotations"].update(annotations or {})
    pods = [inputs.pod_info(p) for p in pod_objs(BASE, "n1")]
    cfg = config.colocation
    nr = calculator.calculate(cfg, cfg.for_node(node), node, metric_status(BASE, "n1", NOW),
                              pods, NOW, extra=PluginInputs(config, topology))
    return calculator.prepare_node(node, nr)
