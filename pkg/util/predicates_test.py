"""Which updates wake the slo-controller."""

from __future__ import annotations

from api.slo.v1alpha1.nodeslo import NodeSLO
from pkg.util.predicates import generation_changed, node_slo_inputs_changed


def node(labels: dict[str, str] | None = None, cpu: str = "8",
         heartbeat: str = "t0", annotations: dict[str, str] | None = None) -> dict:
    return {"metadata": {"name": "n", "labels": labels or {}, "annotations": annotations or {}},
            "status": {"allocatable": {"cpu": cpu},
                       "conditions": [{"type": "Ready", "lastHeartbeatTime": heartbeat}]}}


def test_node_heartbeats_are_ignored_but_labels_allocatable_annotations_count() -> None:
    assert not node_slo_inputs_changed(node(), node(heartbeat="t1"))
    assert node_slo_inputs_changed(node(), node(labels={"pool": "a"}))
    assert node_slo_inputs_changed(node(), node(cpu="16"))
    assert node_slo_inputs_changed(
        node(), node(annotations={"node.koordinator.sh/network-bandwidth": "10G"}))


def test_generation_changed_for_dicts_and_models() -> None:
    assert not generation_changed({"metadata": {"generation": 1, "resourceVersion": "5"}},
                                  {"metadata": {"generation": 1, "resourceVersion": "6"}})
    assert generation_changed({"metadata": {"generation": 1}}, {"metadata": {"generation": 2}})
    old = NodeSLO.model_validate({"metadata": {"name": "n", "generation": 3}})
    new = NodeSLO.model_validate({"metadata": {"name": "n", "generation": 4}})
    assert generation_changed(old, new)
    assert not generation_changed(old, old.model_copy())
