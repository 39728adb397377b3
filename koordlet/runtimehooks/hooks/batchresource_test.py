"""BatchResource yields exactly upstream's cgroup values (the cases of upstream
`hooks/batchresource/batch_resource_test.go` and more)."""

from __future__ import annotations

import pytest

from api.extension.qos import LABEL_POD_QOS
from api.slo.v1alpha1 import NodeSLOSpec
from koordlet.runtimehooks.hooks.batchresource import BatchResourceRule, batch_resource
from koordlet.runtimehooks.protocol import Resources
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.testing import (
    BATCH_POD_CASES,
    GI,
    batch,
    hook_request,
)


@pytest.mark.parametrize(("containers", "ratio", "suppress", "shares", "quota", "memory"),
                         BATCH_POD_CASES)
def test_pod_values(containers, ratio, suppress, shares, quota, memory) -> None:
    rules = Rules(batch_resource=BatchResourceRule(not suppress, ratio))
    assert batch_resource(hook_request(containers), rules) == Resources(
        cpu_shares=shares, cfs_quota=quota, memory_limit=memory)


C0 = {"requests": batch("500", "2Gi"), "limits": batch("500", "2Gi")}

CONTAINER_CASES = [
    ({"limits": batch("1000", "2Gi")}, -1, False, 2, 100000, 2 * GI),
    (C0, -1, False, 512, 50000, 2 * GI),
    ({"requests": batch("500", "2Gi")}, -1, False, 512, -1, -1),
    (C0, 1.2, False, 512, 41667, 2 * GI),
    (C0, -1, True, 512, -1, 2 * GI),
]


@pytest.mark.parametrize(("spec", "ratio", "suppress", "shares", "quota", "memory"),
                         CONTAINER_CASES)
def test_container_values(spec, ratio, suppress, shares, quota, memory) -> None:
    rules = Rules(batch_resource=BatchResourceRule(not suppress, ratio))
    assert batch_resource(hook_request({"c0": spec}, container="c0"), rules) == Resources(
        cpu_shares=shares, cfs_quota=quota, memory_limit=memory)


def test_only_be_pods_with_batch_resources() -> None:
    rules = Rules()
    ls = {LABEL_POD_QOS: "LS"}
    assert batch_resource(hook_request({"c0": C0}, labels=ls), rules) == Resources()
    assert batch_resource(hook_request({"c0": C0}, labels={}), rules) == Resources()
    assert batch_resource(hook_request({}), rules) == Resources()
    assert batch_resource(hook_request({"c0": C0}, container="other"), rules) == Resources()


def test_rule_from_node_slo_and_node_annotation() -> None:
    rule = BatchResourceRule()
    spec = NodeSLOSpec.model_validate(
        {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota"}})
    assert rule.update_node_slo(spec) is True
    assert rule.enable_cfs_quota is False
    assert rule.update_node_slo(spec) is False
    spec = NodeSLOSpec.model_validate(
        {"resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cpuset"}})
    assert rule.update_node_slo(spec) is True and rule.enable_cfs_quota is True

    key = "node.koordinator.sh/cpu-normalization-ratio"
    assert rule.update_node_annotations({key: "1.2"}) is True
    assert rule.cpu_normalization_ratio == 1.2
    assert rule.update_node_annotations({key: "1.205"}) is False  # moved less than 0.01
    assert rule.update_node_annotations({}) is True and rule.cpu_normalization_ratio == -1
    for bad in ("0", "-1", "fast"):
        with pytest.raises(ValueError, match="cpu-normalization-ratio"):
            rule.update_node_annotations({key: bad})
