"""Informer event handlers that feed the scheduler's cache and queue.

Corresponds to kube-scheduler ``pkg/scheduler/eventhandlers.go``: unscheduled pods whose
``schedulerName`` is one of our profiles go to the scheduling queue; assigned pods and nodes
go to the cache, and their changes move pods that some plugin rejected back to the queue
when a registered cluster event says they may now fit. Objects are parsed JSON dicts.
``EventHandlers`` is also the scheduler adapter plugins with fake pods of their own feed
(``frameworkext.interface.SchedulerEventSource``: Reservation's reserve pods).
"""

from __future__ import annotations

import logging
from typing import Any

from api.extension.objects import is_pod_terminated
from pkg.client.informers import EventHandlerFuncs, FilteringEventHandler, deleted_object
from pkg.client.resources import ELASTIC_QUOTAS, NODE_METRICS, NODES, POD_GROUPS, PODS
from scheduler.framework import events as ev
from scheduler.framework.cache import Cache
from scheduler.framework.types import pod_key
from scheduler.frameworkext.interface import InformerFactory, SchedulerEventSource
from scheduler.scheduler import Scheduler

log = logging.getLogger(__name__)


def _assigned(pod: Any) -> bool:
    return bool(((pod or {}).get("spec") or {}).get("nodeName"))


class EventHandlers:
    """The scheduler's reactions to pod and node events (usable without informers, too)."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched
        self._profiles = set(sched.profiles)

    @property
    def cache(self) -> Cache:
        return self.sched.cache

    def responsible_for(self, pod: Any) -> bool:
        spec = (pod or {}).get("spec") or {}
        return (spec.get("schedulerName") or "default-scheduler") in self._profiles

    # Unscheduled pods → queue --------------------------------------------------------------

    def add_pod_to_queue(self, pod: dict[str, Any]) -> None:
        self.sched.queue.add(pod)

    def update_pod_in_queue(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.sched.cache.is_assumed(pod_key(new)):
            return  # being bound by us; the informer will report it assigned
        self.sched.queue.update(old, new)

    def delete_pod_from_queue(self, obj: Any) -> None:
        pod = deleted_object(obj)
        self.sched.queue.delete(pod)
        self.sched.forget_pod(pod_key(pod))
        for fwk in self.sched.profiles.values():
            wp = fwk.get_waiting_pod(((pod.get("metadata") or {}).get("uid")) or "")
            if wp is not None:
                wp.reject("", "removed")

    # Assigned pods → cache -----------------------------------------------------------------

    def add_pod_to_cache(self, pod: dict[str, Any]) -> None:
        self.sched.cache.add_pod(pod)
        self.sched.forget_pod(pod_key(pod))
        self.sched.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, pod)

    def update_pod_in_cache(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if is_pod_terminated(new):
            self.delete_pod_from_cache(new)
            return
        self.sched.cache.update_pod(old, new)
        for event in ev.pod_update_events(old, new):
            self.sched.queue.move_all_to_active_or_backoff(event, old, new)

    def delete_pod_from_cache(self, obj: Any) -> None:
        pod = deleted_object(obj)
        self.sched.cache.remove_pod(pod)
        self.sched.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, pod, None)

    # Nodes → cache -----------------------------------------------------------------------

    def add_node(self, node: dict[str, Any]) -> None:
        self.sched.cache.add_node(node)
        self.sched.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node)

    def update_node(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.sched.cache.update_node(old, new)
        for event in ev.node_update_events(old, new):
            self.sched.queue.move_all_to_active_or_backoff(event, old, new)

    def delete_node(self, obj: Any) -> None:
        node = deleted_object(obj)
        self.sched.cache.remove_node(node)
        self.sched.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, node, None)

    # Koordinator custom resources -----------------------------------------------------------

    def custom_resource_handler(self, resource: str) -> EventHandlerFuncs:
        """Moves pods rejected by plugins that registered events on ``resource``."""
        queue = self.sched.queue
        add, update, delete = (ev.ClusterEvent(resource, a) for a in (
            ev.ActionType.ADD, ev.ActionType.UPDATE, ev.ActionType.DELETE))
        return EventHandlerFuncs(
            lambda obj: queue.move_all_to_active_or_backoff(add, None, obj),
            lambda old, new: queue.move_all_to_active_or_backoff(update, old, new),
            lambda obj: queue.move_all_to_active_or_backoff(delete, deleted_object(obj), None))

    # Wiring --------------------------------------------------------------------------------

    def register(self, informer_factory: InformerFactory) -> list[object]:
        """Attach to the pod and node informers; returns the registrations."""
        pods = informer_factory.informer_for(PODS, typed=False)
        nodes = informer_factory.informer_for(NODES, typed=False)
        regs = [
            pods.add_event_handler(FilteringEventHandler(
                lambda p: _assigned(p) and not is_pod_terminated(p),
                EventHandlerFuncs(self.add_pod_to_cache, self.update_pod_in_cache,
                                  self.delete_pod_from_cache))),
            pods.add_event_handler(FilteringEventHandler(
                lambda p: not _assigned(p) and not is_pod_terminated(p) and self.responsible_for(p),
                EventHandlerFuncs(self.add_pod_to_queue, self.update_pod_in_queue,
                                  self.delete_pod_from_queue))),
            nodes.add_event_handler(EventHandlerFuncs(self.add_node, self.update_node,
                                                      self.delete_node)),
        ]
        sources: dict[str, SchedulerEventSource] = {}
        for fwk in self.sched.profiles.values():
            for name, plugin in fwk.instances.items():
                # The queue and cache are shared: one instance per plugin feeds them.
                if isinstance(plugin, SchedulerEventSource):
                    sources.setdefault(name, plugin)
        for source in sources.values():
            regs.extend(source.register_scheduler_handlers(self, informer_factory))
        registered = {e.event.resource for fwk in self.sched.profiles.values()
                      for events in fwk.events_to_register().values() for e in events}
        for event_resource, resource in ((ev.NODE_METRIC, NODE_METRICS),
                                         (ev.POD_GROUP, POD_GROUPS),
                                         (ev.ELASTIC_QUOTA, ELASTIC_QUOTAS)):
            if event_resource in registered:
                informer = informer_factory.informer_for(resource, typed=False)
                # After the plugins' own handlers: their caches hold the change first.
                regs.append(informer.add_event_handler(
                    self.custom_resource_handler(event_resource), after_existing=True))
        return regs
