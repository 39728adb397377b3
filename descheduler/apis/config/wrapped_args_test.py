"""The args of the wrapped sigs.k8s.io/descheduler plugins: upstream's defaults
(``defaults_test.go``) and validation rules (``validation_test.go``), each error at its
field."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.apis.config.args import (
    PodLifeTimeArgs,
    RemoveFailedPodsArgs,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from descheduler.apis.config.loader import decode_plugin_args


def problems(name: str, raw: dict[str, Any]) -> list[str]:
    args, errors = decode_plugin_args(name, raw)
    assert errors == [], errors
    assert args is not None and not isinstance(args, dict)
    return [str(e) for e in args.validate_args()]


def test_defaults() -> None:
    lifetime, _ = decode_plugin_args("PodLifeTime", {})
    assert isinstance(lifetime, PodLifeTimeArgs)
    assert (lifetime.max_pod_life_time_seconds, lifetime.states) == (None, [])
    failed, _ = decode_plugin_args("RemoveFailedPods", {})
    assert isinstance(failed, RemoveFailedPodsArgs)
    assert (failed.min_pod_lifetime_seconds, failed.reasons, failed.exit_codes,
            failed.including_init_containers) == (3600, [], [], False)
    spread, _ = decode_plugin_args("RemovePodsViolatingTopologySpreadConstraint", {})
    assert isinstance(spread, RemovePodsViolatingTopologySpreadConstraintArgs)
    assert (spread.constraints, spread.topology_balance_node_fit) == (["DoNotSchedule"], True)
    kept, _ = decode_plugin_args("RemovePodsViolatingTopologySpreadConstraint",
                                 {"constraints": ["ScheduleAnyway"],
                                  "topologyBalanceNodeFit": False})
    assert isinstance(kept, RemovePodsViolatingTopologySpreadConstraintArgs)
    assert (kept.constraints, kept.topology_balance_node_fit) == (["ScheduleAnyway"], False)


BAD_SELECTOR = {"matchExpressions": [{"key": "a", "operator": "In"}]}
BOTH_NAMESPACES = {"include": ["a"], "exclude": ["b"]}


@pytest.mark.parametrize("name, raw, expected", [
    ("PodLifeTime", {"maxPodLifeTimeSeconds": 1}, []),
    ("PodLifeTime", {}, ["maxPodLifeTimeSeconds: MaxPodLifeTimeSeconds not set"]),
    ("PodLifeTime", {"maxPodLifeTimeSeconds": 1, "namespaces": BOTH_NAMESPACES},
     ["namespaces: only one of Include/Exclude namespaces can be set"]),
    ("PodLifeTime", {"maxPodLifeTimeSeconds": 1, "states": ["Pending", "CrashLoopBackOff",
                                                           "NodeLost", "Succeeded"]}, []),
    ("PodLifeTime", {"maxPodLifeTimeSeconds": 1, "states": ["Sleeping"]},
     ["states: states must be one of [ContainerCreating CrashLoopBackOff "
      "CreateContainerConfigError CreateContainerError ErrImagePull Failed ImagePullBackOff "
      "InvalidImageName NodeAffinity NodeLost Pending PodInitializing Running Shutdown "
      "Succeeded UnexpectedAdmissionError Unknown]"]),
    ("RemoveFailedPods", {"reasons": ["x"], "exitCodes": [1]}, []),
    ("RemoveFailedPods", {"namespaces": BOTH_NAMESPACES},
     ["namespaces: only one of Include/Exclude namespaces can be set"]),
    ("RemovePodsHavingTooManyRestarts", {"podRestartThreshold": 1, "states": ["Running"]}, []),
    ("RemovePodsHavingTooManyRestarts", {},
     ["podRestartThreshold: invalid PodsHavingTooManyRestarts threshold"]),
    ("RemovePodsHavingTooManyRestarts", {"podRestartThreshold": 1, "states": ["Pending"]},
     ["states: states must be one of [CrashLoopBackOff Running]"]),
    ("RemovePodsViolatingNodeAffinity", {},
     ["nodeAffinityType: nodeAffinityType needs to be set"]),
    ("RemovePodsViolatingNodeAffinity", {"nodeAffinityType": ["sometimes"]},
     ["nodeAffinityType[0]: unsupported value 'sometimes': must be one of "
      "'requiredDuringSchedulingIgnoredDuringExecution', "
      "'preferredDuringSchedulingIgnoredDuringExecution'"]),
    ("RemovePodsViolatingNodeTaints", {"excludedTaints": ["a"], "includedTaints": ["b"]},
     ["includedTaints: either includedTaints or excludedTaints can be set, but not both"]),
    ("RemovePodsViolatingInterPodAntiAffinity", {"labelSelector": BAD_SELECTOR},
     ["labelSelector"]),
    ("RemoveDuplicates", {"namespaces": BOTH_NAMESPACES},
     ["namespaces: only one of Include/Exclude namespaces can be set"]),
    ("RemovePodsViolatingTopologySpreadConstraint", {"constraints": ["Never"]},
     ["constraints[0]: unsupported value 'Never': must be one of 'DoNotSchedule', "
      "'ScheduleAnyway'"]),
])
def test_validation(name: str, raw: dict[str, Any], expected: list[str]) -> None:
    found = problems(name, raw)
    assert len(found) == len(expected) and all(
        f.startswith(e) for f, e in zip(found, expected, strict=True)), found


def test_negative_lifetimes_do_not_decode() -> None:
    _, errors = decode_plugin_args("PodLifeTime", {"maxPodLifeTimeSeconds": -1})
    assert [e.path for e in errors] == ["maxPodLifeTimeSeconds"]
