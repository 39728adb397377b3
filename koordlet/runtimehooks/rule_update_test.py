"""Rule updates: each hook parses its own rule from NodeSLO and the node; a change re-applies."""

from __future__ import annotations

import logging

import pytest

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.runtimehooks.hooks.groupidentity import GroupIdentityRule
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.rule_update import RuleUpdater
from koordlet.statesinformer.callbacks import RegisterType

RATIO = "node.koordinator.sh/cpu-normalization-ratio"
SLO = NodeSLO.model_validate({"metadata": {"name": "node-1"}, "spec": {
    "resourceUsedThresholdWithBE": {"enable": True, "cpuSuppressPolicy": "cfsQuota"},
    "resourceQOSStrategy": {"beClass": {"cpuQOS": {"enable": True, "groupIdentity": -1}}},
}})


def test_node_slo_and_node_update_each_hooks_rule_and_reapply_once() -> None:
    node = {"metadata": {"name": "node-1", "annotations": {RATIO: "1.2"}}}
    rules, applied = Rules(), []
    updater = RuleUpdater(rules, lambda: SLO, lambda: node, lambda: applied.append(1))
    updater.callback(RegisterType.NODE_SLO_SPEC, None)
    assert rules.batch_resource.enable_cfs_quota is False
    assert rules.group_identity == GroupIdentityRule(be_value=-1, be_enabled=True)
    updater.callback(RegisterType.NODE_METADATA, None)
    assert rules.batch_resource.cpu_normalization_ratio == 1.2
    assert applied == [1, 1]
    updater.callback(RegisterType.NODE_SLO_SPEC, None)
    updater.callback(RegisterType.NODE_METADATA, None)
    assert applied == [1, 1]  # nothing changed


def test_a_malformed_ratio_is_logged_naming_the_node_and_kept(
        caplog: pytest.LogCaptureFixture) -> None:
    rules = Rules()
    rules.batch_resource.cpu_normalization_ratio = 1.2
    node = {"metadata": {"name": "node-1", "annotations": {RATIO: "fast"}}}
    updater = RuleUpdater(rules, lambda: None, lambda: node, lambda: None)
    with caplog.at_level(logging.ERROR):
        assert updater.update_node_metadata() is False
    assert "node node-1" in caplog.text and "keeping cpu normalization ratio 1.2" in caplog.text
    assert rules.batch_resource.cpu_normalization_ratio == 1.2
