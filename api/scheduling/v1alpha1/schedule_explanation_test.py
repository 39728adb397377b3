"""ScheduleExplanation: round trip, the 24h TTL default, always-written explanations."""

from __future__ import annotations

from api.scheduling.v1alpha1.schedule_explanation import (
    ScheduleExplanation,
    TopologyDomainLevelExplanation,
)

EXPLANATION = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "ScheduleExplanation",
    "metadata": {"name": "web-0", "namespace": "default",
                 "labels": {"scheduling.koordinator.sh/questioned-object-key": "default.web-0"}},
    "spec": {"questionObjectKey": "default/web-0", "ttl": "1h"},
    "status": {
        "schedulable": False,
        "schedulableAfterPreemption": True,
        "failedMessage": "0/3 nodes are available",
        "lastUpdateTime": "2024-03-05T08:00:00Z",
        "detailedExplanation": [{
            "topologyDomain": "cluster",
            "scheduleExplanation": {
                "failedMessage": "insufficient cpu",
                "feasibleSchedulingResult": [{"namespace": "default", "name": "web-0",
                                              "uid": "u1", "nodeName": "node-1"}],
                "nodeFailedDetails": [{"failedPlugin": "NodeResourcesFit",
                                       "reason": "Insufficient cpu", "preemptMightHelp": True,
                                       "failedNodes": ["node-2", "node-3"]}],
            },
            "nodePossibleVictims": [{"nodeName": "node-2", "possibleVictims": [
                {"namespace": "default", "name": "batch-0", "uid": "u2",
                 "isNominatedPod": False}]}],
            "preemptExplanation": {"schedulable": True},
        }],
    },
}


def test_round_trips() -> None:
    explanation = ScheduleExplanation.model_validate(EXPLANATION)
    assert explanation.to_dict() == EXPLANATION
    assert explanation.spec.ttl_seconds == 3600


def test_ttl_defaults_to_a_day_without_being_written() -> None:
    explanation = ScheduleExplanation.model_validate({"spec": {"questionObjectKey": "a/b"}})
    assert explanation.spec.ttl_effective == "24h"
    assert explanation.spec.ttl_seconds == 86400
    assert explanation.to_dict()["spec"] == {"questionObjectKey": "a/b"}


def test_node_level_explanations_are_always_written() -> None:
    assert TopologyDomainLevelExplanation().to_dict() == {
        "scheduleExplanation": {}, "preemptExplanation": {}}


def test_kind_facts() -> None:
    assert ScheduleExplanation.namespaced
    assert ScheduleExplanation.short_names == ("sched-exp",)
