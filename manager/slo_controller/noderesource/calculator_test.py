"""The batch/mid formulas over the shared table, plus messages and the write decision."""

from __future__ import annotations

import json

import pytest

from api.configuration.slo_controller_config import parse_colocation_config
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from manager.slo_controller.noderesource import calculator, inputs
from manager.slo_controller.noderesource.cases import CASES, Case
from manager.slo_controller.noderesource.cases_fixtures import metric_status, node_obj, pod_objs
from pkg.util.podresources import quantity_int

NOW = 1_800_000_000.0


def run(case: Case, node_name: str = "n1") -> tuple[dict, calculator.NodeResource]:
    cfg = parse_colocation_config(json.dumps(case.config))
    node = node_obj(case, node_name)
    pods = [inputs.pod_info(p) for p in pod_objs(case, node_name)]
    strategy = cfg.for_node(node)
    nr = calculator.calculate(cfg, strategy, node, metric_status(case, node_name, NOW), pods,
                              NOW)
    return calculator.prepare_node(node, nr), nr


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_table(case: Case) -> None:
    node, _ = run(case)
    alloc, cap = node["status"]["allocatable"], node["status"]["capacity"]
    for name, want in case.expect.items():
        if want is None:
            assert name not in alloc and name not in cap
        else:
            assert quantity_int(name, alloc[name]) == want, name
            assert cap[name] == alloc[name]


def test_upstream_messages() -> None:
    _, nr = run(CASES[0])
    assert nr.messages[BATCH_CPU] == (
        "batchAllocatable[CPU(Milli-Core)]:25000 = nodeCapacity:100000 - nodeSafetyMargin:35000"
        " - systemUsageOrNodeReserved:7000 - podHPUsed:33000")
    assert nr.messages[BATCH_MEMORY] == (
        "batchAllocatable[Mem(GB)]:33 = nodeCapacity:120 - nodeSafetyMargin:42 - "
        "systemUsage:12 - podHPUsed:33")
    _, capped = run(CASES[4])
    assert capped.messages[BATCH_CPU].startswith(
        "batchAllocatable[CPU(Milli-Core)]:20000 = min(nodeCapacity:100000 * thresholdRatio:0.2,")


def test_missing_nodemetric_degrades() -> None:
    case = CASES[0]
    cfg = parse_colocation_config(json.dumps(case.config))
    node = node_obj(case, "n1")
    nr = calculator.calculate(cfg, cfg.for_node(node), node, None, [], NOW)
    assert nr.resets[BATCH_CPU] and nr.resources[BATCH_CPU] is None
    assert "degradedByBatchResource" in nr.messages[BATCH_CPU]


def test_origin_extended_allocatable_annotation() -> None:
    node, _ = run(CASES[0])
    origin = json.loads(node["metadata"]["annotations"][
        "node.koordinator.sh/originExtendedAllocatable"])
    assert origin == {"resources": {BATCH_CPU: "25k", BATCH_MEMORY: "33G"}}


def test_write_only_past_diff_threshold_or_time() -> None:
    case = CASES[0]
    cfg = parse_colocation_config(json.dumps(case.config))
    node, _ = run(case)
    strategy = cfg.for_node(node)
    smaller = json.loads(json.dumps(node))
    # 25000 → 23000 is an 8% change: below the default 10% diff threshold
    for key in ("allocatable", "capacity"):
        smaller["status"][key][BATCH_CPU] = "23000"
    assert calculator.need_status_update(strategy, node, smaller, NOW, NOW + 10) == (False, "")
    assert calculator.need_status_update(strategy, node, smaller, NOW, NOW + 301)[0]
    assert calculator.need_status_update(strategy, node, smaller, None, NOW)[0]
    smaller["status"]["allocatable"][BATCH_CPU] = "22000"  # 12%
    assert calculator.need_status_update(strategy, node, smaller, NOW, NOW + 10)[0]


def test_malformed_inputs_do_not_raise() -> None:
    case = Case("bad", CASES[0].config, CASES[0].pods, {},
                annotations={"node.koordinator.sh/reservation": "{not json"})
    node, _ = run(case)
    assert quantity_int(BATCH_CPU, node["status"]["allocatable"][BATCH_CPU]) == 25000


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("nodeUsage", "1e30", "status.nodeMetric.nodeUsage.resources: cpu quantity '1e30' is beyond"),
    ("systemUsage", "-1e30", "status.nodeMetric.systemUsage.resources: cpu quantity '-1e30' is "
                             "negative"),
    ("podUsage", "-1e30", "status.podsMetric[0].podUsage.resources: cpu quantity '-1e30' is "
                          "negative"),
    ("nodeUsage", "NaN", "status.nodeMetric.nodeUsage.resources: cpu quantity 'NaN' is not a "
                         "finite quantity"),
])
def test_untrusted_usage_degrades_instead_of_absurd_batch(field, value, problem) -> None:
    # A -1e30 usage made batch-cpu 1e30 cores; now such a NodeMetric counts as degraded.
    case = CASES[0]
    cfg = parse_colocation_config(json.dumps(case.config))
    node = node_obj(case, "n1")
    status = metric_status(case, "n1", NOW)
    target = (status["podsMetric"][0]["podUsage"] if field == "podUsage"
              else status["nodeMetric"].setdefault(field, {"resources": {"memory": "1Gi"}}))
    target["resources"]["cpu"] = value
    assert problem in (inputs.untrusted_usage(status) or "")
    nr = calculator.calculate(cfg, cfg.for_node(node), node, status,
                              [inputs.pod_info(p) for p in pod_objs(case, "n1")], NOW)
    for name in (BATCH_CPU, BATCH_MEMORY):
        assert nr.resets[name] and nr.resources[name] is None
        assert "degradedByBatchResource" in nr.messages[name]


def test_deeply_nested_origin_annotation_is_rewritten() -> None:
    # json.loads raised RecursionError on a node annotation nested 5,000 levels.
    case = Case("deep", CASES[0].config, CASES[0].pods, {}, annotations={
        "node.koordinator.sh/originExtendedAllocatable": "[" * 5000 + "]" * 5000})
    node, _ = run(case)
    origin = json.loads(node["metadata"]["annotations"][
        "node.koordinator.sh/originExtendedAllocatable"])
    assert origin == {"resources": {BATCH_CPU: "25k", BATCH_MEMORY: "33G"}}
