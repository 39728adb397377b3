"""Per-cycle plugin state.

Corresponds to kube-scheduler ``pkg/scheduler/framework/cycle_state.go``. Plugins write what
they computed at PreFilter/PreScore under their own key and read it later in the same cycle.
The framework clones the state when it simulates nominated pods or preemption victims, so
values that a simulation may change must implement ``clone()`` (``StateData``).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StateData(Protocol):
    def clone(self) -> StateData: ...


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins", "record_plugin_metrics")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        # Plugins that returned Skip at PreFilter / PreScore for this pod.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # Plugin durations are sampled, as upstream does, to keep metrics cheap.
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        """The value under ``key``; KeyError when a plugin did not write it this cycle."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        c = CycleState()
        c._data = {k: (v.clone() if isinstance(v, StateData) else v)
                   for k, v in self._data.items()}
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        return c
