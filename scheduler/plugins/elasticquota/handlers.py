"""Informer handlers that feed the ElasticQuota plugin's quota tree.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/quota_handler.go``,
``pod_handler.go`` and ``node_handler.go``, with the pod migration of ``plugin_helper.go``
(``migrateDefaultQuotaGroupsPod``, ``migratePods``). Quota and pod events go to the quota's tree
(``managers.QuotaManagers``), node events to the default tree. It owns which quota each known
pod is charged to: a pod whose quota appears later, or whose quota goes away (to the default quota),
is moved with its request and use as soon as the quota event arrives (upstream polls the
default quota every second for that); a pod reserved but not bound yet keeps its use too.

A malformed ElasticQuota (a quantity that does not parse) never reaches the tree: the plugin
logs it and records a Warning event on the object naming the field, and keeps the quota's last
good state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from typing import Any

from api.extension.elastic_quota import (
    ROOT_QUOTA_NAME,
    get_parent_quota_name,
    get_quota_namespaces,
)
from api.extension.objects import (
    KubeDict,
    annotations_of,
    is_pod_terminated,
    labels_of,
    metadata_of,
    name_of,
    namespaced_name,
)
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.events.events import WARNING
from scheduler.frameworkext.interface import EventRecorder
from scheduler.plugins.elasticquota.core import GroupQuotaManager
from scheduler.plugins.elasticquota.managers import QuotaManagers

log = logging.getLogger(__name__)

REASON_INVALID_QUOTA = "InvalidElasticQuota"


class QuotaTreeFeeder:
    """Passes quota, pod and node events on to the quota trees."""

    def __init__(self, managers: QuotaManagers | GroupQuotaManager,
                 recorder: EventRecorder | None) -> None:
        self.managers = managers if isinstance(managers, QuotaManagers) \
            else QuotaManagers(managers)
        # The default tree: every quota's when MultiQuotaTree is off, the nodes' always.
        self.manager = self.managers.default
        self._recorder = recorder
        self._lock = threading.Lock()
        # pod key → (the quota it is charged to, the pod as last seen)
        self._pods: dict[str, tuple[str, KubeDict]] = {}

    # --- handlers for the informers --------------------------------------------------------

    def quota_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.on_quota_add, self.on_quota_update, self.on_quota_delete)

    def pod_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.on_pod_add, self.on_pod_update, self.on_pod_delete)

    def node_handler(self) -> EventHandlerFuncs:
        return EventHandlerFuncs(self.manager.on_node_add, self.manager.on_node_update,
                                 lambda obj: self.manager.on_node_delete(deleted_object(obj)))

    # --- quotas ----------------------------------------------------------------------------

    def on_quota_add(self, quota: KubeDict) -> None:
        self.on_quota_update(None, quota)

    def on_quota_update(self, old: KubeDict | None, new: KubeDict) -> None:
        if metadata_of(new).get("deletionTimestamp"):
            return
        known = self.managers.has_quota(name_of(new))
        try:
            manager = self.managers.update_quota(new)
        except ValueError as err:
            self._invalid(new, f"{err}; the scheduler keeps the quota's last valid state")
            return
        parent = get_parent_quota_name(name_of(new), labels_of(new))
        # The root quota's own parent is "".
        if parent and parent != ROOT_QUOTA_NAME and parent not in manager.quota_names():
            # Its children may be listed before it: the quota is kept and waits for it.
            self._invalid(new, f"elastic quota {namespaced_name(new)}: parent quota "
                               f"{parent!r} (label quota.scheduling.koordinator.sh/parent) "
                               "not found; the quota gets no runtime until it exists")
        # Status writes update quotas every second: only a change of what maps pods to
        # quotas walks the pods.
        if not known or old is None or _pod_mapping(old) != _pod_mapping(new):
            self._migrate()

    def on_quota_delete(self, obj: Any) -> None:
        quota = deleted_object(obj)
        # Its pods reserved but not bound yet go on using whichever quota takes them.
        reserved = self.managers.assigned_pods(name_of(quota)).keys()
        if self.managers.delete_quota(quota):
            self._migrate(reserved)

    def _invalid(self, quota: KubeDict, message: str) -> None:
        log.error("%s", message)
        if self._recorder is not None:
            self._recorder.eventf(quota, None, WARNING, REASON_INVALID_QUOTA, "Scheduling",
                                  "%s", message)

    def _migrate(self, reserved: Collection[str] = ()) -> None:
        """Move every pod whose quota changed by the last quota event (a quota created after
        its pods, or deleted with pods left: ``reserved`` are the keys of its pods that used
        it)."""
        with self._lock:
            for key, (charged, pod) in list(self._pods.items()):
                now = self.managers.quota_name_for_pod(pod)
                if now != charged:
                    self.managers.move_pod(charged, now, pod, pod)
                    if key in reserved and not is_pod_terminated(pod):
                        self.managers.for_quota(now).reserve_pod(now, pod)
                    self._pods[key] = (now, pod)

    # --- pods ------------------------------------------------------------------------------

    def quota_of(self, pod: KubeDict) -> str:
        """The quota the pod is charged to, or would be if it is not known yet."""
        with self._lock:
            known = self._pods.get(namespaced_name(pod))
        return known[0] if known is not None else self.managers.quota_name_for_pod(pod)

    def known_pod(self, key: str) -> tuple[str, KubeDict] | None:
        """(its quota, the pod as last seen) of a pod known by ``namespace/name``."""
        with self._lock:
            return self._pods.get(key)

    def on_pod_add(self, pod: KubeDict) -> None:
        with self._lock:
            quota = self.managers.quota_name_for_pod(pod)
            self._pods[namespaced_name(pod)] = (quota, pod)
            self.managers.for_quota(quota).on_pod_add(quota, pod)

    def ensure_pod(self, pod: KubeDict) -> str:
        """Charge a pod the scheduler sees before the pod informer delivered it (the queue
        may hear of it first); the quota it is charged to."""
        with self._lock:
            known = self._pods.get(namespaced_name(pod))
            if known is not None:
                return known[0]
        self.on_pod_add(pod)
        return self.quota_of(pod)

    def on_pod_update(self, old: KubeDict, new: KubeDict) -> None:
        with self._lock:
            known = self._pods.get(namespaced_name(old))
            before = known[0] if known is not None else self.managers.quota_name_for_pod(old)
            after = self.managers.quota_name_for_pod(new)
            self._pods.pop(namespaced_name(old), None)
            self._pods[namespaced_name(new)] = (after, new)
            self.managers.move_pod(before, after, old, new)

    def on_pod_delete(self, obj: Any) -> None:
        pod = deleted_object(obj)
        with self._lock:
            known = self._pods.pop(namespaced_name(pod), None)
            quota = known[0] if known is not None else self.managers.quota_name_for_pod(pod)
            self.managers.for_quota(quota).on_pod_delete(quota, pod)


def _pod_mapping(quota: KubeDict) -> tuple[str, str, list[str]]:
    """What decides which pods a quota takes: its name, namespace and ``namespaces``."""
    md = metadata_of(quota)
    return (md.get("name") or "", md.get("namespace") or "",
            get_quota_namespaces(annotations_of(quota)))


__all__ = ["REASON_INVALID_QUOTA", "QuotaTreeFeeder"]
