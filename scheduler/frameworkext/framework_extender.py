"""The transformers a profile enables, and running them.

Corresponds to the transformer parts of koordinator
``pkg/scheduler/frameworkext/framework_extender.go``: ``frameworkExtenderImpl``'s enabled
transformer lists (``SetConfiguredPlugins``: a plugin's transformer runs only where the
plugin is enabled, in that point's order) and the transformer loops at the start of its
``RunPreFilterPlugins``, ``RunFilterPluginsWithNominatedPods`` and ``RunScorePlugins`` (and
``AfterPreFilter`` after the PreFilter plugins). Upstream wraps the framework in an extender
that does this; here ``Framework`` holds a ``Transformers`` and calls it at those points, so
the framework itself is the one typed handle plugins receive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import PreFilterResult
from scheduler.framework.status import Code, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.frameworkext.interface import (
    FilterTransformer,
    PreFilterTransformer,
    ScoreTransformer,
)


@dataclass(frozen=True, slots=True)
class Transformers:
    pre_filter: tuple[PreFilterTransformer, ...] = ()
    filter: tuple[FilterTransformer, ...] = ()
    score: tuple[ScoreTransformer, ...] = ()

    @classmethod
    def enabled(cls, pre_filter: Sequence[object], filter: Sequence[object],
                score: Sequence[object]) -> Transformers:
        """The transformers among the plugins enabled at PreFilter, Filter and Score."""
        return cls(tuple(p for p in pre_filter if isinstance(p, PreFilterTransformer)),
                   tuple(p for p in filter if isinstance(p, FilterTransformer)),
                   tuple(p for p in score if isinstance(p, ScoreTransformer)))

    def before_pre_filter(self, state: CycleState,
                          pod: PodInfo) -> tuple[PodInfo, Status | None]:
        for t in self.pre_filter:
            transformed, status = t.before_pre_filter(state, pod)
            if status is not None and not status.is_success():
                return pod, _failed(status, t.name)
            pod = transformed
        return pod, None

    def after_pre_filter(self, state: CycleState, pod: PodInfo,
                         result: PreFilterResult | None) -> Status | None:
        for t in self.pre_filter:
            status = t.after_pre_filter(state, pod, result)
            if status is not None and not status.is_success():
                return _failed(status, t.name)
        return None

    def before_filter(self, state: CycleState, pod: PodInfo,
                      node_info: NodeInfo) -> tuple[PodInfo, NodeInfo, Status | None]:
        for t in self.filter:
            new_pod, new_node_info, status = t.before_filter(state, pod, node_info)
            if status is not None and not status.is_success():
                return pod, node_info, _failed(status, t.name)
            pod, node_info = new_pod, new_node_info
        return pod, node_info, None

    def before_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
                     ) -> tuple[PodInfo, Sequence[NodeInfo], Status | None]:
        for t in self.score:
            new_pod, new_nodes, status = t.before_score(state, pod, nodes)
            if status is not None and not status.is_success():
                return pod, nodes, _failed(status, t.name)
            if [n.name for n in new_nodes] != [n.name for n in nodes]:
                return pod, nodes, Status(Code.ERROR, f"BeforeScore of plugin {t.name!r} "
                                          "changed the nodes to score", plugin=t.name)
            pod, nodes = new_pod, new_nodes
        return pod, nodes, None


def _failed(status: Status, plugin: str) -> Status:
    """The transformer is the failed plugin, whatever the status said (SetFailedPlugin)."""
    status.plugin = plugin
    return status
