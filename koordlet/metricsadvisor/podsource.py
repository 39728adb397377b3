"""Where the pod collectors' pods are on this node: the cgroup dirs of statesinformer's pods
and their containers (upstream builds them inline in
``pkg/koordlet/metricsadvisor/collectors/podresource/pod_resource_collector.go``).

Kept apart from the collectors so that they, and the collection benchmark, do not import the
statesinformer and the API models.
"""

from __future__ import annotations

import os

from api.extension.qos import get_kube_qos_class
from koordlet.metricsadvisor.framework import ContainerCgroup, PodCgroup
from koordlet.statesinformer.states_view import StatesView
from koordlet.util.system.cgroup_env import CgroupEnv


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
