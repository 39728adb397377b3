"""Where the pod collectors' pods are on this node: the cgroup dirs of statesinformer's pods
and their containers (upstream builds them inline in
``pkg/koordlet/metricsadvisor/collectors/podresource/pod_resource_collector.go``); likewise the
NodeSLO host applications' dirs for the host application collector
(``collectors/hostapplication``).

Kept apart from the collectors so that they, and the collection benchmark, do not import the
statesinformer and the API models.
"""

from __future__ import annotations

import os

from api.extension.qos import get_kube_qos_class
from koordlet.metricsadvisor.framework import ContainerCgroup, PodCgroup
from koordlet.metricsadvisor.hostapplication import HostAppCgroup
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.host_app import host_app_relative_dir


def pod_cgroups(env: CgroupEnv, view: StatesView) -> list[PodCgroup]:
    """The collector's pods: the cgroup dirs (with the kube-path prefix) of this node's pods
    and their containers."""
    out = []
    for pod in view.get_all_pods():
        md = pod["metadata"]
        pod_dir = env.pod_dir(get_kube_qos_class(pod), md["uid"])
        containers = tuple(
            ContainerCgroup(cs["containerID"], os.path.join(
                env.prefix, env.container_dir(pod_dir, cs["containerID"])), cs.get("name", ""))
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
            if cs.get("containerID"))
        out.append(PodCgroup(md["uid"], os.path.join(env.prefix, pod_dir), containers,
                             md.get("name", ""), md.get("namespace", "")))
    return out


def host_app_cgroups(env: CgroupEnv, view: StatesView) -> list[HostAppCgroup] | None:
    """The NodeSLO's host applications and their cgroup dirs (with the kube-path prefix); None
    without a NodeSLO. The view has already dropped the entries whose dir is malformed."""
    slo = view.get_node_slo()
    if slo is None:
        return None
    return [HostAppCgroup(app.name or "",
                          os.path.join(env.prefix, host_app_relative_dir(env.driver, app)),
                          app.priority or "", app.qos or "")
            for app in slo.spec.host_applications or []]
