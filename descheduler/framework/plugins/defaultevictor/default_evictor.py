"""DefaultEvictor: which pods may be evicted, and evicting them with a policy/v1 Eviction.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/defaultevictor`` wrapping
sigs.k8s.io/descheduler's ``defaultevictor`` (the filter) with a direct Eviction as ``Evict``.
The filter keeps what upstream protects: pods marked ``descheduler.alpha.kubernetes.io/evict``
are always evictable; otherwise terminating, mirror, static and DaemonSet pods, bare pods (but
failed ones with ``evictFailedBarePods``), system-critical pods and pods at or above the
priority threshold, pods with local storage, pods with PVCs (``ignorePvcPods``) and pods outside
``labelSelector`` are not. With ``nodeFit``, PreEvictionFilter keeps pods that no other ready
node would take. Not here yet: ``priorityThreshold.name`` (only its ``value`` counts).
"""

from __future__ import annotations

import logging
from typing import Any

from api.extension.objects import labels_of
from descheduler.apis.config.args import DefaultEvictorArgs
from descheduler.framework.types import EvictOptions, Handle, Obj, ObjectLister
from descheduler.metrics import RESULT_ERROR, RESULT_SUCCESS, record_eviction
from descheduler.utils.node import NodeFit, PodsOnNode, node_ready, pod_fits_any_other_node
from pkg.client.errors import ApiError
from pkg.evictions.evictions import EvictionClient, evict_pod, pod_key
from pkg.util.labels import Selector, parse_selector, parse_selector_string

log = logging.getLogger(__name__)

NAME = "DefaultEvictor"
ANNOTATION_EVICT = "descheduler.alpha.kubernetes.io/evict"
ANNOTATION_MIRROR = "kubernetes.io/config.mirror"
ANNOTATION_CONFIG_SOURCE = "kubernetes.io/config.source"
# scheduling.SystemCriticalPriority: system-cluster-critical and above.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
SYSTEM_CRITICAL_CLASSES = ("system-cluster-critical", "system-node-critical")


class EvictorFilter:
    """The evictability checks alone (sigs.k8s.io/descheduler's ``EvictorFilter``), for the
    plugins that evict otherwise, as the MigrationController. ``evict_all_bare_pods`` lets
    every bare pod through (Koordinator's ``evictAllBarePods``, not a DefaultEvictor arg)."""

    def __init__(self, args: DefaultEvictorArgs, evict_all_bare_pods: bool = False, *,
                 nodes: ObjectLister | None = None, pods_on_node: PodsOnNode | None = None,
                 node_selector: str = "") -> None:
        self.args = args
        self.evict_all_bare_pods = evict_all_bare_pods
        self.nodes = nodes
        self.pods_on_node = pods_on_node
        self._selector: Selector | None = (parse_selector(args.label_selector)
                                           if args.label_selector is not None else None)
        self._node_selector = parse_selector_string(node_selector)

    def filter(self, pod: Obj) -> bool:
        md = pod.get("metadata") or {}
        annotations = md.get("annotations") or {}
        if ANNOTATION_EVICT in annotations:
            return True
        spec = pod.get("spec") or {}
        owners = md.get("ownerReferences") or []
        if md.get("deletionTimestamp"):
            return False
        if ANNOTATION_MIRROR in annotations or annotations.get(
                ANNOTATION_CONFIG_SOURCE, "api") != "api":
            return False
        if any(o.get("kind") == "DaemonSet" for o in owners):
            return False
        if not owners and not self.evict_all_bare_pods and not (
                self.args.evict_failed_bare_pods
                and (pod.get("status") or {}).get("phase") == "Failed"):
            return False
        priority = spec.get("priority")
        if not self.args.evict_system_critical_pods:
            if spec.get("priorityClassName") in SYSTEM_CRITICAL_CLASSES or (
                    isinstance(priority, int) and priority >= SYSTEM_CRITICAL_PRIORITY):
                return False
            threshold = self.args.priority_threshold
            if threshold is not None and threshold.value is not None and (
                    priority or 0) >= threshold.value:
                return False
        volumes = spec.get("volumes") or []
        if not self.args.evict_local_storage_pods and any(
                "hostPath" in v or "emptyDir" in v for v in volumes):
            return False
        if self.args.ignore_pvc_pods and any("persistentVolumeClaim" in v for v in volumes):
            return False
        return self._selector is None or self._selector.matches(md.get("labels") or {})

    def pre_eviction_filter(self, pod: Obj) -> bool:
        """With ``nodeFit``: some other ready node matching the node selector would take the
        pod (without the nodes to look at, every pod passes)."""
        if not self.args.node_fit or self.nodes is None or self.pods_on_node is None:
            return True
        nodes = [n for n in self.nodes.list()
                 if self._node_selector.matches(labels_of(n)) and node_ready(n)]
        if not pod_fits_any_other_node(NodeFit(self.pods_on_node), pod, nodes):
            log.debug("pod %s fits no other node", pod_key(pod))
            return False
        return True


class DefaultEvictor:
    def __init__(self, args: DefaultEvictorArgs, client: EvictionClient, *,
                 nodes: ObjectLister | None = None,
                 pods_on_node: PodsOnNode | None = None) -> None:
        self.args = args
        self.client = client
        self._filter = EvictorFilter(args, nodes=nodes, pods_on_node=pods_on_node)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> DefaultEvictor:
        return cls(args if isinstance(args, DefaultEvictorArgs) else DefaultEvictorArgs(),
                   handle.client, nodes=handle.nodes, pods_on_node=handle.pods_on_node)

    def name(self) -> str:
        return NAME

    def filter(self, pod: Obj) -> bool:
        return self._filter.filter(pod)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        return self._filter.pre_eviction_filter(pod)

    def evict(self, pod: Obj, options: EvictOptions) -> bool:
        """A policy/v1 Eviction of ``pod``; False (logged) when the API refuses it. Each
        attempt counts in ``descheduler_pods_evicted``."""
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        node = (pod.get("spec") or {}).get("nodeName") or ""
        try:
            evict_pod(self.client, pod)
        except ApiError as err:
            log.error("evict pod %s failed (%s): %s", pod_key(pod), options.reason, err)
            record_eviction(RESULT_ERROR, options.plugin_name, namespace, node)
            return False
        log.info("evicted pod %s (plugin %s): %s", pod_key(pod), options.plugin_name,
                 options.reason)
        record_eviction(RESULT_SUCCESS, options.plugin_name, namespace, node)
        return True
