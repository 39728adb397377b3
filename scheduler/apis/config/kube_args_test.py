"""kube-scheduler's in-tree plugin args: defaults (v1 defaults.go) and validation
(validation_pluginargs.go), decoded from their JSON form."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.apis.config.base import PluginArgs
from scheduler.apis.config.kube_args import KUBE_ARGS_KINDS
from scheduler.apis.config.plugin_args import decode_plugin_args
from scheduler.apis.config.types import V1

CPU_MEMORY = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]

DEFAULTS: dict[str, dict[str, Any]] = {
    "NodeResourcesFit": {"ignoredResources": [], "ignoredResourceGroups": [],
                         "scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEMORY}},
    "NodeResourcesBalancedAllocation": {"resources": CPU_MEMORY},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "PodTopologySpread": {"defaultConstraints": [], "defaultingType": "System"},
    "NodeAffinity": {},
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
    "DynamicResources": {"filterTimeout": "10s", "bindingTimeout": "10m0s"},
}


def decode(name: str, raw: dict[str, Any] | None) -> PluginArgs:
    args, errors = decode_plugin_args(name, raw, V1)
    assert errors == [] and isinstance(args, PluginArgs)
    return args


def problems(name: str, raw: dict[str, Any]) -> list[str]:
    args, errors = decode_plugin_args(name, raw, V1)
    if errors:
        return [str(e) for e in errors]
    assert isinstance(args, PluginArgs)
    return [str(e) for e in args.validate_args()]


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_defaults(name: str) -> None:
    assert set(DEFAULTS) == set(KUBE_ARGS_KINDS)
    expected = {"apiVersion": V1, "kind": f"{name}Args", **DEFAULTS[name]}
    assert decode(name, None).to_dict() == expected
    assert KUBE_ARGS_KINDS[name]().validate_args() == []


def test_fit_resources_and_zero_weights_are_defaulted() -> None:
    args = decode("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}})
    assert args.to_dict()["scoringStrategy"]["resources"] == CPU_MEMORY
    args = decode("NodeResourcesFit", {"scoringStrategy": {
        "type": "MostAllocated", "resources": [{"name": "example.com/gpu"}]}})
    assert args.to_dict()["scoringStrategy"]["resources"] == [
        {"name": "example.com/gpu", "weight": 1}]
    balanced = decode("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu"}]})
    assert balanced.to_dict()["resources"] == [{"name": "cpu", "weight": 1}]


def test_requested_to_capacity_ratio_shape() -> None:
    args = decode("NodeResourcesFit", {"scoringStrategy": {
        "type": "RequestedToCapacityRatio",
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                               {"utilization": 100, "score": 10}]}}})
    assert args.validate_args() == []


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("NodeResourcesFit", {"scoringStrategy": {"type": "Balanced"}},
     ["scoringStrategy.type: unsupported value 'Balanced': must be one of 'LeastAllocated', "
      "'MostAllocated', 'RequestedToCapacityRatio'"]),
    ("NodeResourcesFit", {"scoringStrategy": {"resources": CPU_MEMORY}},
     ["scoringStrategy.type: unsupported value '': must be one of 'LeastAllocated', "
      "'MostAllocated', 'RequestedToCapacityRatio'"]),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "LeastAllocated",
                                              "resources": [{"name": "cpu", "weight": 101}]}},
     ["scoringStrategy.resources[0].weight: must be in 1..100, got 101"]),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
     ["scoringStrategy.requestedToCapacityRatio: must be specified when type is "
      "RequestedToCapacityRatio"]),
    ("NodeResourcesFit", {"scoringStrategy": {
        "type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": [
            {"utilization": 50, "score": 11}, {"utilization": 40, "score": 0}]}}},
     ["scoringStrategy.requestedToCapacityRatio.shape[1].utilization: values must be sorted in "
      "increasing order",
      "scoringStrategy.requestedToCapacityRatio.shape[0].score: must be in 0..10, got 11"]),
    ("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated",
                                              "requestedToCapacityRatio": {"shape": []}}},
     ["scoringStrategy.requestedToCapacityRatio: must be nil when type is not "
      "RequestedToCapacityRatio"]),
    ("NodeResourcesFit", {"ignoredResourceGroups": ["example.com/x"]},
     ["ignoredResourceGroups[0]: resource group name can't contain '/'"]),
    ("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2},
                                                       {"name": "cpu", "weight": 1}]},
     ["resources[0].weight: must be 1, got 2", "resources[1].name: duplicate value 'cpu'"]),
    ("InterPodAffinity", {"hardPodAffinityWeight": 101},
     ["hardPodAffinityWeight: must be in 0..100, got 101"]),
    ("PodTopologySpread", {"defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}]},
     ["defaultingType: must be List when defaultConstraints are given"]),
    ("PodTopologySpread", {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "Maybe",
         "labelSelector": {}}]},
     ["defaultConstraints[0].maxSkew: must be positive, got 0",
      "defaultConstraints[0].whenUnsatisfiable: unsupported value 'Maybe': must be one of "
      "'DoNotSchedule', 'ScheduleAnyway'",
      "defaultConstraints[0].labelSelector: must not be set: the selector is deduced for each "
      "pod"]),
    ("NodeAffinity", {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}],
                               "matchFields": [{"key": "metadata.uid", "operator": "In",
                                                "values": ["x"]}]}]}}},
     ["addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
      "matchExpressions[0].values: must be non-empty for In",
      "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
      "matchFields[0].key: unsupported field selector key 'metadata.uid': only 'metadata.name' "
      "is supported"]),
    ("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
     ["minCandidateNodesPercentage: cannot be zero at the same time as "
      "minCandidateNodesAbsolute"]),
    ("VolumeBinding", {"bindTimeoutSeconds": -1, "shape": []},
     ["bindTimeoutSeconds: must not be negative, got -1",
      "shape: unexpected field `shape`, remove it or turn on the feature gate "
      "StorageCapacityScoring"]),
    ("DynamicResources", {"bindingTimeout": "500ms"},
     ["bindingTimeout: must be at least 1 second"]),
])
def test_validation(name: str, raw: dict[str, Any], expected: list[str]) -> None:
    assert problems(name, raw) == expected
