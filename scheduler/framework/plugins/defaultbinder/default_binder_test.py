from __future__ import annotations

from collections.abc import Mapping

from pkg.client.errors import ApiError
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.plugins.defaultbinder.default_binder import DefaultBinder
from scheduler.framework.status import Code
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.testing import new_handle


class Refusing:
    def bind(self, pod: PodInfo, node_name: str,
             annotations: Mapping[str, str] | None = None) -> None:
        raise ApiError(409, "Conflict", f'pod {pod.name} is already assigned to node "n0"')


def pod() -> PodInfo:
    return PodInfo({"metadata": {"name": "p", "namespace": "default"},
                    "spec": {"containers": [{"name": "c"}]}})


def test_binds_through_the_handles_binder() -> None:
    binder = InMemoryBinder()
    plugin = DefaultBinder(None, new_handle(binder=binder))
    assert plugin.bind(CycleState(), pod(), "n1") is None
    assert binder.bindings == {"default/p": "n1"}


def test_a_refused_binding_is_an_error() -> None:
    status = DefaultBinder(None, new_handle(binder=Refusing())).bind(CycleState(), pod(), "n1")
    assert status is not None and status.code == Code.ERROR
    assert isinstance(status.error, ApiError)
    assert status.message() == '409 Conflict: pod p is already assigned to node "n0"'


def test_the_binding_sets_the_annotations_pre_bind_deferred_to_it() -> None:
    """Coscheduling's bind-gang annotations ride on the Binding (one API write, not two)."""
    bound: list[dict[str, object]] = []
    binder = InMemoryBinder(bound.append)
    handle = new_handle(binder=binder)
    plugin = DefaultBinder(None, handle)
    state = CycleState()
    assert handle.defer_to_binding(state, {"a": "1"})
    assert handle.defer_to_binding(state, {"b": "2"})
    assert plugin.bind(state, pod(), "n1") is None
    assert bound[0]["metadata"] == {"name": "p", "namespace": "default",
                                    "annotations": {"a": "1", "b": "2"}}
