"""Top-level validation of a defaulted configuration (kube-scheduler's validation.go)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.apis.config.defaults import set_defaults
from scheduler.apis.config.types import V1, KubeSchedulerConfiguration
from scheduler.apis.config.validation import validate_config


def problems(**fields: Any) -> list[str]:
    config = KubeSchedulerConfiguration.model_validate(
        {"apiVersion": V1, "kind": "KubeSchedulerConfiguration", **fields}, by_name=False)
    set_defaults(config)
    return [str(e) for e in validate_config(config)]


def test_defaults_are_valid() -> None:
    assert problems() == []


@pytest.mark.parametrize(("fields", "expected"), [
    ({"parallelism": 0}, "parallelism: must be greater than zero, got 0"),
    ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore: must be in 0..100, got 101"),
    ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be greater than 0, got 0"),
    ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 4},
     "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (5), got 4"),
    ({"profiles": [{"schedulerName": "a", "percentageOfNodesToScore": -1}]},
     "profiles[0].percentageOfNodesToScore: must be in 0..100, got -1"),
    ({"profiles": [{"schedulerName": ""}]}, "profiles[0].schedulerName: required"),
    ({"profiles": [{"schedulerName": "a",
                    "plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}]},
     "profiles[0].plugins.filter.enabled[0]: EBSLimits was removed from kube-scheduler"),
    ({"profiles": [{"schedulerName": "a", "plugins": {"queueSort": {"enabled": [
        {"name": "A"}, {"name": "B"}]}}}]},
     "profiles[0].plugins.queueSort.enabled: only one queue sort plugin can be enabled"),
    ({"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}},
     "leaderElection.leaseDuration: must be greater than renewDeadline (10.0s), got 10.0s"),
    ({"leaderElection": {"renewDeadline": "2s"}},
     "leaderElection.renewDeadline: must be greater than 1.2 x retryPeriod (2.0s), got 2.0s"),
    ({"leaderElection": {"resourceLock": "endpointsleases"}},
     "leaderElection.resourceLock: must be 'leases', got 'endpointsleases'"),
    ({"clientConnection": {"burst": -1}}, "clientConnection.burst: must not be negative, got -1"),
    ({"extenders": [{"urlPrefix": "http://e", "prioritizeVerb": "p"}]},
     "extenders[0].weight: must be positive when prioritizeVerb is set, got 0"),
    ({"extenders": [{"urlPrefix": "http://e", "bindVerb": "b"},
                    {"urlPrefix": "http://f", "bindVerb": "b"}]},
     "extenders: only one extender can implement bind, found 2"),
    ({"extenders": [{"urlPrefix": "http://e", "managedResources": [{"name": "cpu"}]}]},
     "extenders[0].managedResources[0].name: 'cpu' is not an extended resource name"),
])
def test_invalid(fields: dict[str, Any], expected: str) -> None:
    assert problems(**fields) == [expected]


def test_leader_election_is_not_checked_when_off() -> None:
    assert problems(leaderElection={"leaderElect": False, "resourceLock": "configmaps"}) == []


def test_queue_sort_args_must_match_across_profiles() -> None:
    sort = {"queueSort": {"enabled": [{"name": "MySort"}], "disabled": [{"name": "*"}]}}
    profiles = [{"schedulerName": name, "plugins": sort,
                 "pluginConfig": [{"name": "MySort", "args": {"x": x}}]}
                for name, x in (("a", 1), ("b", 2))]
    assert problems(profiles=profiles) == [
        "profiles[1].pluginConfig[0].args: queueSort args must be the same for all profiles"]
