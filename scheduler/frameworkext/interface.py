"""The extended handle plugins are built with.

Corresponds to koordinator ``pkg/scheduler/frameworkext/interface.go`` (``ExtendedHandle``,
``ForgetPodHandler``) over kube-scheduler's ``framework.Handle``. Every plugin is constructed as
``Plugin(args, handle)`` with its profile's ``ExtendedHandle``; ``Framework``
(``scheduler/framework/runtime.py``) is the implementation. Upstream's separate Koordinator
clientset and informer factory are one here: the client and the shared informer factory serve
Kubernetes objects and Koordinator's CRDs alike (``Resource.for_model(NodeMetric)``).

The Protocols at the end are what the scheduler uses of ``pkg``'s client, informer factory and
event recorder, so that tests and benchmarks can hand in their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from pkg.util.clock import Clock
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PodNominator
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

    def add_event_handler(self, handler: ResourceEventHandler) -> object: ...


class InformerFactory(Protocol):
    """``pkg.client.informers.SharedInformerFactory``."""

    def informer_for(self, resource: Resource, *, typed: bool | None = None) -> Informer: ...


class EventRecorder(Protocol):
    """``pkg.events.recorder.EventRecorder``."""

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None: ...

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None: ...
