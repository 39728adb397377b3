"""The extended handle plugins are built with, and the transformer interfaces.

Corresponds to koordinator ``pkg/scheduler/frameworkext/interface.go`` (``ExtendedHandle``,
``PreFilterTransformer``, ``FilterTransformer``, ``ScoreTransformer``, ``ForgetPodHandler``,
``NextPodPlugin``)
over kube-scheduler's ``framework.Handle``. Every plugin is constructed as
``Plugin(args, handle)`` with its profile's ``ExtendedHandle``; ``Framework``
(``scheduler/framework/runtime.py``) is the implementation. Upstream's separate Koordinator
clientset and informer factory are one here: the client and the shared informer factory serve
Kubernetes objects and Koordinator's CRDs alike (``Resource.for_model(NodeMetric)``).

A transformer is a plugin that also subclasses one of the transformer bases below. It runs
only when the plugin is enabled at the matching extension point, in that point's order, and
what it returns is what that point's plugins see (changes go to copies, never to the pod or
NodeInfo it was given):

* ``before_pre_filter`` before the PreFilter plugins (``after_pre_filter`` after them, when
  they all passed);
* ``before_filter`` before the Filter plugins, node by node (preemption's and the nominated
  pods' re-checks included);
* ``before_score`` before the Score plugins, with the nodes to score.

A transformer's failure is the point's status, with the transformer as the failed plugin.

A plugin that schedules objects of its own as fake pods (Reservation's reserve pods, which
never exist in the API server) feeds them to the scheduler's queue and cache itself
(``SchedulerEventSource``, upstream's reservation event handlers over the extender's scheduler
adapter) and answers for them where the scheduler would ask the pod API (``FakePodOwner``:
upstream's error-handler filters for reserve pods).

A plugin that holds pods for reasons of its own can say where a pending pod stands with it
(``PodStateExplainer``: Coscheduling, the pod's gang; ElasticQuota, its quota path); the
why-pending entry (``scheduler/diagnosis.py``) carries what it says.

The Protocols at the end are what the scheduler uses of ``pkg``'s client, informer factory and
event recorder, so that tests and benchmarks can hand in their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pkg.util.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import Plugin, PodNominator, PreFilterResult
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status
from scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from pkg.client.informers.handlers import ResourceEventHandler
    from pkg.client.informers.listers import Lister
    from pkg.client.informers.store import Indexer
    from pkg.client.resources import Resource
    from scheduler.framework.binder import Binder
    from scheduler.framework.runtime import WaitingPod
    from scheduler.metrics.metrics import SchedulerMetrics

# Called with an assumed pod the scheduler forgot (its binding failed), so that plugins that
# account for assumed pods themselves release it.
ForgetPodHandler = Callable[[PodInfo], None]


@dataclass(frozen=True, slots=True)
class PodState:
    """What a plugin holds a pending pod for, beyond one attempt's Filter results: the debug
    entry's ``section`` (JSON ``data``) and the same in words (``lines``)."""

    section: str
    message: str  # the entry's message when the pod has no failed attempt kept
    data: Mapping[str, object]
    lines: tuple[str, ...]


@runtime_checkable
class PodStateExplainer(Protocol):
    """A plugin that can say where a pending pod stands with it; None for pods it does not
    hold."""

    def explain_pod(self, key: str) -> PodState | None: ...


class PodCache(Protocol):
    """The scheduler cache's pod operations (``scheduler.framework.cache.Cache``)."""

    def update_pod(self, old: dict[str, Any] | None, new: dict[str, Any]) -> None: ...

    def is_assumed(self, key: str) -> bool: ...


class SchedulerAdapter(Protocol):
    """What a plugin may do to the scheduler's queue and cache (``scheduler.eventhandlers.
    EventHandlers``): the same as the informers' pod events do, and ``cache`` for changes
    that move no pod in the queue."""

    @property
    def cache(self) -> PodCache: ...

    def responsible_for(self, pod: Any) -> bool:
        """The pod names one of the scheduler's profiles."""
        ...

    def add_pod_to_queue(self, pod: dict[str, Any]) -> None: ...

    def update_pod_in_queue(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def delete_pod_from_queue(self, obj: Any) -> None: ...

    def add_pod_to_cache(self, pod: dict[str, Any]) -> None: ...

    def update_pod_in_cache(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def delete_pod_from_cache(self, obj: Any) -> None: ...


@runtime_checkable
class SchedulerEventSource(Protocol):
    """A plugin with objects of its own to schedule or to count on nodes, as fake pods."""

    def register_scheduler_handlers(self, adapter: SchedulerAdapter,
                                    informer_factory: InformerFactory) -> list[object]:
        """Attach to the informers, feeding ``adapter``; returns the registrations."""
        ...


@runtime_checkable
class FakePodOwner(Protocol):
    """A plugin whose fake pods the scheduler must not look up, patch or report on in the
    pod API."""

    def owns(self, pod: PodInfo) -> bool: ...

    def still_pending(self, pod: PodInfo) -> bool:
        """The object behind the fake pod still waits to be scheduled (a failed attempt is
        requeued only then)."""
        ...

    def report_failure(self, pod: PodInfo, reason: str, message: str) -> None:
        """Say on the object why the attempt failed (the pod's FailedScheduling event and
        PodScheduled condition). Called on a binding worker: may call the API."""
        ...


class ExtendedHandle(Protocol):
    """What a plugin may use of its profile's framework."""

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def client(self) -> ClientSet | None:
        """None when the scheduler runs without an API server (benchmarks, tests)."""

    @property
    def informer_factory(self) -> InformerFactory | None:
        """None when the scheduler runs without informers (benchmarks, tests)."""

    @property
    def nominator(self) -> PodNominator | None: ...

    @property
    def recorder(self) -> EventRecorder | None: ...

    @property
    def binder(self) -> Binder | None: ...

    @property
    def metrics(self) -> SchedulerMetrics | None: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def run_filter_plugins_with_nominated_pods(self, state: CycleState, pod: PodInfo,
                                               node_info: NodeInfo) -> Status | None: ...

    def run_pre_filter_extension_add_pod(self, state: CycleState, pod: PodInfo,
                                         to_add: PodInfo, node_info: NodeInfo
                                         ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(self, state: CycleState, pod: PodInfo,
                                            to_remove: PodInfo, node_info: NodeInfo
                                            ) -> Status | None: ...

    def register_forget_pod_handler(self, handler: ForgetPodHandler) -> None: ...

    def defer_to_binding(self, state: CycleState, annotations: Mapping[str, str]) -> bool:
        """PreBind: have the binding set ``annotations`` on the pod (False: patch them)."""
        ...

    def activate(self, pods: Sequence[dict[str, Any]]) -> None:
        """Move pods held or backing off into activeQ (upstream's PodActivator)."""


# Transformers ----------------------------------------------------------------------------


class PreFilterTransformer(Plugin):
    def before_pre_filter(self, state: CycleState,
                          pod: PodInfo) -> tuple[PodInfo, Status | None]:
        """The pod the PreFilter plugins see (``pod`` itself when unchanged)."""
        raise NotImplementedError

    def after_pre_filter(self, state: CycleState, pod: PodInfo,
                         result: PreFilterResult | None) -> Status | None:
        """Runs after every PreFilter plugin passed, e.g. to correct their cycle state."""
        return None


class FilterTransformer(Plugin):
    def before_filter(self, state: CycleState, pod: PodInfo,
                      node_info: NodeInfo) -> tuple[PodInfo, NodeInfo, Status | None]:
        """The pod and NodeInfo the Filter plugins see on this node (the given ones when
        unchanged)."""
        raise NotImplementedError


class ScoreTransformer(Plugin):
    def before_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                     ) -> tuple[PodInfo, Sequence[NodeInfo], Status | None]:
        """The pod and NodeInfos the Score plugins see: one per node of ``nodes``, in
        order (the given ones when unchanged)."""
        raise NotImplementedError


class NextPodPlugin(Plugin):
    """Chooses the pod the scheduler pops next (upstream's ``NextPodPlugin``), e.g. the next
    member of the gang being scheduled, so that a gang's pods are tried one after another."""

    def next_pod(self) -> str | None:
        """The ``namespace/name`` key of the pod to schedule next; None for the queue's own
        order. Called under the queue's lock: keep it short and never call into the queue."""
        raise NotImplementedError


# What the scheduler uses of pkg's client, informers and events --------------------------


class ClientSet(Protocol):
    """``pkg.client.rest.Client``."""

    def request(self, method: str, path: str, *, body: Any = None) -> Any: ...

    def patch(self, resource: Resource, name: str, patch: Any, namespace: str | None = None,
              *, patch_type: str = "merge", subresource: str | None = None) -> Any: ...

    def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Any: ...


class Informer(Protocol):
    """``pkg.client.informers.SharedInformer``."""

    @property
    def lister(self) -> Lister[Any]: ...

    @property
    def indexer(self) -> Indexer: ...

    def add_event_handler(self, handler: ResourceEventHandler, resync_period: float | None = None,
                          *, after_existing: bool = False) -> object: ...

    def set_transform(self, transform: Callable[[dict[str, Any]], Any] | None) -> None: ...


class InformerFactory(Protocol):
    """``pkg.client.informers.SharedInformerFactory``."""

    def informer_for(self, resource: Resource, *, typed: bool | None = None) -> Informer: ...


class EventRecorder(Protocol):
    """``pkg.events.events.EventRecorder`` (client-go ``tools/events``): kube-scheduler's
    ``handle.EventRecorder().Eventf(regarding, related, type, reason, action, note, args...)``."""

    def eventf(self, regarding: Any, related: Any, type_: str, reason: str, action: str,
               note: str, *args: Any) -> None: ...


# A profile's recorder by its schedulerName, the events' reportingController (upstream
# profile.RecorderFactory).
RecorderFactory = Callable[[str], EventRecorder]
