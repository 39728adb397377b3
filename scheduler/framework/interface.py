"""The plugin interfaces: one base class per kube-scheduler extension point.

Corresponds to kube-scheduler ``pkg/scheduler/framework/interface.go``. A plugin is a class
that subclasses the bases of the points it implements (that is how it declares them) and is
constructed as ``Plugin(args, handle)``: ``args`` is its typed args model from the
configuration (the pluginConfig dict for a plugin without one, or None), ``handle`` the
profile's ``frameworkext.ExtendedHandle``. Plugins are registered in
``scheduler/plugins/registry.py``.

Two additions over upstream, both for speed in Python and both optional:

* ``FilterPlugin.filter_nodes`` filters every node of the snapshot at once and returns a
  boolean mask (True = passes). The default loops over ``filter``; the hot plugins override it
  with numpy over ``Snapshot``'s arrays. ``filter`` stays the reference: preemption, nominated
  pods, filter transformers and the why-pending diagnosis call it on single (possibly modified)
  NodeInfos, and a test per plugin checks that both agree.
* ``ScorePlugin.score_nodes`` scores the feasible nodes (indices into the snapshot) at once.

``explain`` lets a Filter plugin say by how much a node missed, for the diagnosis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from scheduler.framework.cycle_state import CycleState
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Status, is_success, state_not_found
from scheduler.framework.types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from scheduler.apis.config.base import PluginArgs
    from scheduler.framework.events import ClusterEventWithHint
    from scheduler.framework.queue import QueuedPodInfo
    from scheduler.frameworkext.interface import ExtendedHandle

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
# Permit waits are capped, as upstream's maxTimeout.
MAX_PERMIT_TIMEOUT = 15 * 60.0


@dataclass(slots=True)
class PreFilterResult:
    """Nodes a PreFilter plugin restricts the pod to; None = all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return PreFilterResult(set(other.node_names))
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(slots=True)
class PostFilterResult:
    nominated_node_name: str = ""


@dataclass
class NodeToStatus:
    """Why each node was rejected; nodes not listed share ``absent`` (upstream NodeToStatus)."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status | None = None

    def get(self, node_name: str) -> Status | None:
        return self.statuses.get(node_name, self.absent)


class Plugin:
    """Base of every plugin. ``name`` is the upstream plugin name used in configurations."""

    name: ClassVar[str] = ""

    def __init__(self, args: PluginArgs | dict[str, Any] | None,
                 handle: ExtendedHandle) -> None:
        self.handle = handle


class PodNominator(Protocol):
    """Pods nominated to nodes (upstream ``PodNominator``; ``nominator.Nominator``)."""

    def add_nominated_pod(self, pod_info: PodInfo, node_name: str | None = None) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: Mapping[str, Any]) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def nodes_with_nominated_pods(self) -> list[str]: ...


class EnqueueExtensions:
    """Plugins that reject pods say which cluster events may make those pods schedulable."""

    def events_to_register(self) -> list[ClusterEventWithHint]:
        raise NotImplementedError


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        raise NotImplementedError


class PreFilterExtensions(Protocol):
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None: ...

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None: ...


class PodUpdatingPreFilterExtensions:
    """AddPod/RemovePod for a PreFilter plugin whose cycle state (under
    ``pre_filter_state_key``) updates itself with ``update_with_pod(other, pod, node_info,
    ±1)``: InterPodAffinity and PodTopologySpread keep per-domain pod counts that way."""

    pre_filter_state_key: ClassVar[str]

    def pre_filter_extensions(self) -> PodUpdatingPreFilterExtensions:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo,
                node_info: NodeInfo) -> Status | None:
        return self._update(state, pod, pod_to_add, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo,
                   node_info: NodeInfo) -> Status | None:
        return self._update(state, pod, pod_to_remove, node_info, -1)

    def _update(self, state: CycleState, pod: PodInfo, other: PodInfo, node_info: NodeInfo,
                delta: int) -> Status | None:
        s = state.get(self.pre_filter_state_key)
        if s is None:
            return state_not_found(self.pre_filter_state_key)
        s.update_with_pod(other, pod, node_info, delta)
        return None


class PreFilterPlugin(Plugin):
    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        raise NotImplementedError

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin):
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status | None:
        raise NotImplementedError

    def filter_nodes(self, state: CycleState, pod: PodInfo,
                     snapshot: Snapshot) -> np.ndarray | None:
        """Mask over ``snapshot.node_infos`` (True = passes); None when every node passes."""
        infos = snapshot.node_infos
        mask = np.fromiter((is_success(self.filter(state, pod, ni)) for ni in infos),
                           dtype=bool, count=len(infos))
        return None if mask.all() else mask

    def explain(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> str | None:
        """How far ``node_info`` is from passing, for the diagnosis (None = nothing to add)."""
        return None


class PostFilterPlugin(Plugin):
    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: PodInfo,
                  nodes: Sequence[NodeInfo]) -> Status | None:
        raise NotImplementedError


class ScorePlugin(Plugin):
    # Plugins with a NormalizeScore step set this and implement normalize_score.
    has_normalize: ClassVar[bool] = False

    def score(self, state: CycleState, pod: PodInfo,
              node_info: NodeInfo) -> tuple[int, Status | None]:
        raise NotImplementedError

    def score_nodes(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
                    idx: np.ndarray) -> tuple[np.ndarray, Status | None]:
        """Scores of the nodes ``snapshot.node_infos[i] for i in idx``, as int64."""
        infos = snapshot.node_infos
        return self.score_each(state, pod, [infos[i] for i in idx])

    def score_each(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[np.ndarray, Status | None]:
        """Scores of ``nodes``, one ``score`` call each, as int64."""
        out = np.empty(len(nodes), dtype=np.int64)
        for j, node_info in enumerate(nodes):
            s, status = self.score(state, pod, node_info)
            if not is_success(status):
                return out, status
            out[j] = s
        return out, None

    def normalize_score(self, state: CycleState, pod: PodInfo,
                        scores: np.ndarray) -> Status | None:
        """Rewrite ``scores`` in place into 0..100."""
        return None


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: PodInfo,
               node_name: str) -> tuple[Status | None, float]:
        """(status, timeout seconds); a Wait status parks the pod until allowed or rejected."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        raise NotImplementedError


class BindPlugin(Plugin):
    # Whether the binding it makes sets the annotations PreBind plugins deferred to it
    # (``scheduler.framework.binder.BINDING_ANNOTATIONS``).
    carries_annotations = False

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Bind, or return Skip to let the next Bind plugin decide."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        raise NotImplementedError


# Extension point (configuration name) → the base class a plugin must subclass to run there.
EXTENSION_POINTS: dict[str, type[Plugin]] = {
    "preEnqueue": PreEnqueuePlugin,
    "queueSort": QueueSortPlugin,
    "preFilter": PreFilterPlugin,
    "filter": FilterPlugin,
    "postFilter": PostFilterPlugin,
    "preScore": PreScorePlugin,
    "score": ScorePlugin,
    "reserve": ReservePlugin,
    "permit": PermitPlugin,
    "preBind": PreBindPlugin,
    "bind": BindPlugin,
    "postBind": PostBindPlugin,
}


def implements(plugin_class: type[Plugin], point: str) -> bool:
    base = EXTENSION_POINTS.get(point)
    return base is not None and issubclass(plugin_class, base)


def default_normalize_score(max_priority: int, reverse: bool, scores: np.ndarray) -> None:
    """kube-scheduler's DefaultNormalizeScore, in place (integer arithmetic as upstream)."""
    if len(scores) == 0:
        return
    m = int(scores.max())
    if m == 0:
        if reverse:
            scores[:] = max_priority
        return
    scores[:] = scores * max_priority // m
    if reverse:
        scores[:] = max_priority - scores
