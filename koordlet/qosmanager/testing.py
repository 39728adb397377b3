"""Test helpers for qosmanager (not a test module, so Bazel tests can import it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.qosmanager.framework import KubeDict
from pkg.client.config import ClientOptions
from pkg.client.resources import NODES, PODS, PRIORITY_CLASSES
from pkg.client.rest import Client
from pkg.util.clock import NoWaitClock


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


def pod_with_containers(uid: str, qos: str | None, kube_qos: str,
                        containers: list[tuple[KubeDict, KubeDict]],
                        annotations: dict[str, str] | None = None,
                        phase: str = "Running") -> KubeDict:
    """A pod whose containers c0, c1... have the given (requests, limits), all started (their
    ids are `containerd://<uid>-c<i>`)."""
    labels = {"koordinator.sh/qosClass": qos} if qos else {}
    return {
        "metadata": {"name": f"pod-{uid}", "namespace": "default", "uid": uid,
                     "labels": labels, "annotations": dict(annotations or {})},
        "spec": {"containers": [
            {"name": f"c{i}", "resources": {"requests": req, "limits": lim}}
            for i, (req, lim) in enumerate(containers)]},
        "status": {"phase": phase, "qosClass": kube_qos, "containerStatuses": [
            {"name": f"c{i}", "containerID": f"containerd://{uid}-c{i}"}
            for i in range(len(containers))]},
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


def be_slo(**thresholds: object) -> NodeSLO:
    """A NodeSLO with `resourceUsedThresholdWithBE` enabled and the given camelCase fields."""
    return NodeSLO.model_validate(
        {
            "metadata": {"name": "node-0"},
            "spec": {"resourceUsedThresholdWithBE": {"enable": True, **thresholds}},
        }
    )


def api_client(kubeconfig: str) -> Client:
    return Client.from_config(ClientOptions(kubeconfig=kubeconfig).load(), clock=NoWaitClock())


class ApiStates:
    """statesinformer reading straight from an API server: the node, this node's pods, and a
    NodeSLO held in the test (the informers' caching is not what these tests are about)."""

    def __init__(self, client: Client, node_name: str, slo: NodeSLO | None) -> None:
        self.client, self.node_name, self.node_slo = client, node_name, slo

    def get_node(self) -> KubeDict | None:
        return self.client.get(NODES, self.node_name)

    def get_node_slo(self) -> NodeSLO | None:
        return self.node_slo

    def get_all_pods(self) -> list[KubeDict]:
        pods = self.client.list(PODS, field_selector=f"spec.nodeName={self.node_name}")
        return pods["items"]


def create_priority_classes(client: Client, values: dict[str, int]) -> None:
    for name, value in values.items():
        client.create(
            PRIORITY_CLASSES,
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": name}, "value": value},
        )


def create_pod(client: Client, name: str, node_name: str, qos: str, priority_class: str,
               labels: dict[str, str] | None = None,
               requests: dict[str, str] | None = None) -> KubeDict:
    """A pod bound to `node_name`; the simulated kubelet runs it."""
    container: KubeDict = {"name": "c", "image": "busybox"}
    if requests:
        container["resources"] = {"requests": requests, "limits": requests}
    return client.create(
        PODS,
        {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"koordinator.sh/qosClass": qos, **(labels or {})}},
            "spec": {"nodeName": node_name, "priorityClassName": priority_class,
                     "containers": [container]},
        },
        "default",
    )


def wait_running(client: Client, names: list[str], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = client.list(PODS, "default")["items"]
        phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase") for p in pods}
        if all(phases.get(n) == "Running" for n in names):
            return
        time.sleep(0.05)
    raise AssertionError(f"pods not running: {phases}")


def live_pod_names(client: Client) -> set[str]:
    """Pods neither gone nor being deleted."""
    pods = client.list(PODS, "default")["items"]
    return {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}


def resctrl_tree(sys_fs: Path, cbm: str = "7ff", root_schemata: str = "L3:0=7ff;1=7ff\n",
                 mba: bool = True) -> Path:
    """A resctrl filesystem laid out as plain files under `sys_fs` the way the kernel shows it
    (`info/L3/cbm_mask`, `info/L3/num_closids`, `info/MB/`, the root `schemata` and `tasks`);
    returns its root."""
    root = sys_fs / "resctrl"
    (root / "info" / "L3").mkdir(parents=True)
    (root / "info" / "L3" / "cbm_mask").write_text(cbm + "\n")
    (root / "info" / "L3" / "num_closids").write_text("16\n")
    if mba:
        (root / "info" / "MB").mkdir()
        (root / "info" / "MB" / "bandwidth_gran").write_text("10\n")
        root_schemata += "MB:0=100;1=100\n"
    (root / "schemata").write_text(root_schemata)
    (root / "tasks").write_text("1\n")
    return root


def resctrl_groups(root: Path) -> None:
    """Group dirs as the kernel creates them on mkdir: schemata and tasks inside."""
    for group in ("LSR", "LS", "BE"):
        (root / group).mkdir()
        (root / group / "schemata").write_text("    L3:0=7ff;1=7ff\n    MB:0=100;1=100\n")
        (root / group / "tasks").write_text("")
