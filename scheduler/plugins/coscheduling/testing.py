"""Test helpers: nodes, gang pods (PodGroup label or gang annotations) and PodGroups, as dicts
the way the informers deliver them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.extension.coscheduling import (
    ANNOTATION_GANG_MIN_NUM,
    ANNOTATION_GANG_MODE,
    ANNOTATION_GANG_NAME,
    ANNOTATION_GANG_WAIT_TIME,
    LABEL_POD_GROUP,
)


def make_node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def make_pod(name: str, cpu: str = "1", *, pod_group: str = "",
             annotations: Mapping[str, str] | None = None, node: str = "",
             namespace: str = "default") -> dict[str, Any]:
    labels = {LABEL_POD_GROUP: pod_group} if pod_group else {}
    return {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                         "labels": labels, "annotations": dict(annotations or {})},
            "spec": {"schedulerName": "koord-scheduler", "nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}}


def gang_annotations(name: str, min_available: int | str, *, mode: str = "",
                     wait: str = "", **extra: str) -> dict[str, str]:
    out = {ANNOTATION_GANG_NAME: name, ANNOTATION_GANG_MIN_NUM: str(min_available), **extra}
    if mode:
        out[ANNOTATION_GANG_MODE] = mode
    if wait:
        out[ANNOTATION_GANG_WAIT_TIME] = wait
    return out


def make_pod_group(name: str, min_member: int, *, timeout: int | None = None,
                   annotations: Mapping[str, str] | None = None,
                   namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"pg-{name}",
                         "annotations": dict(annotations or {})},
            "spec": spec}


_POINTS = ("preEnqueue", "preFilter", "postFilter", "preScore", "score", "reserve", "permit",
           "preBind", "postBind")


def coscheduling_config(default_timeout_seconds: float = 600, *,
                        enable_preemption: bool = False) -> str:
    """A KubeSchedulerConfiguration (no leader election) whose one profile, koord-scheduler,
    runs Coscheduling at every extension point it has, with ``defaultTimeout``. With
    ``enable_preemption``, job-level preemption replaces DefaultPreemption at PostFilter, as
    the chart's ``scheduler.enableJobPreemption`` does."""
    def point(p: str) -> str:
        weight = ", weight: 1" if p == "score" else ""
        disabled = ("disabled: [{name: DefaultPreemption}], "
                    if p == "postFilter" and enable_preemption else "")
        return f"    {p}: {{{disabled}enabled: [{{name: Coscheduling{weight}}}]}}"

    plugins = "\n".join(point(p) for p in _POINTS)
    preemption = ", enablePreemption: true" if enable_preemption else ""
    return ("apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "leaderElection: {leaderElect: false}\n"
            "profiles:\n- schedulerName: koord-scheduler\n  plugins:\n"
            f"{plugins}\n"
            "  pluginConfig:\n  - name: Coscheduling\n"
            f"    args: {{defaultTimeout: {default_timeout_seconds:g}s{preemption}}}\n")
