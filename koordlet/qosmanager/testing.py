"""Test helpers for qosmanager (not a test module, so Bazel tests can import it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.qosmanager.framework import KubeDict


@dataclass
class FakeStates:
    node: KubeDict | None = None
    node_slo: NodeSLO | None = None
    pods: list[KubeDict] = field(default_factory=list)

    def get_node(self) -> KubeDict | None:
        return self.node

    def get_node_slo(self) -> NodeSLO | None:
        return self.node_slo

    def get_all_pods(self) -> list[KubeDict]:
        return self.pods


def node(cpu: str, allocatable_cpu: str | None = None) -> KubeDict:
    return {
        "metadata": {"name": "node-1"},
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi"},
            "allocatable": {"cpu": allocatable_cpu or cpu, "memory": "8Gi"},
        },
    }


def pod(uid: str, qos_label: str | None, kube_qos: str) -> KubeDict:
    labels = {"koordinator.sh/qosClass": qos_label} if qos_label else {}
    return {
        "metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid, "labels": labels},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"qosClass": kube_qos},
    }


def node_slo(enable: bool, threshold: int = 65, policy: str = "cfsQuota") -> NodeSLO:
    return NodeSLO.model_validate(
        {
            "metadata": {"name": "node-1"},
            "spec": {
                "resourceUsedThresholdWithBE": {
                    "enable": enable,
                    "cpuSuppressThresholdPercent": threshold,
                    "cpuSuppressPolicy": policy,
                }
            },
        }
    )
