"""RemovePodsViolatingNodeTaints: evicts pods that do not tolerate a NoSchedule taint of their
node (and PreferNoSchedule ones with ``includePreferNoSchedule``).

Corresponds to sigs.k8s.io/descheduler ``pkg/framework/plugins/removepodsviolatingnodetaints``
as koordinator wraps it (``pkg/descheduler/framework/plugins/kubernetes``). ``excludedTaints``
leaves out, and a non-empty ``includedTaints`` keeps only, the taints named by ``key`` or
``key=value``. NoExecute taints are the taint manager's business, not this plugin's. Candidates
are in the configured namespaces, match the label selector and pass both evictor filters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from descheduler.apis.config.args import RemovePodsViolatingNodeTaintsArgs
from descheduler.framework.plugins.kubernetes.podutil import node_name, pod_filter
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from pkg.util.nodeaffinity import NO_SCHEDULE, PREFER_NO_SCHEDULE, find_untolerated_taint

NAME = "RemovePodsViolatingNodeTaints"


def _named(taint: Mapping[str, Any], names: frozenset[str]) -> bool:
    key, value = taint.get("key") or "", taint.get("value") or ""
    return key in names or bool(value) and f"{key}={value}" in names


class RemovePodsViolatingNodeTaints:
    def __init__(self, args: RemovePodsViolatingNodeTaintsArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self._accepts = pod_filter(args.namespaces, args.label_selector,
                                   handle.evictor.filter, handle.evictor.pre_eviction_filter)
        self._effects = frozenset((NO_SCHEDULE, PREFER_NO_SCHEDULE)
                                  if args.include_prefer_no_schedule else (NO_SCHEDULE,))
        self._excluded = frozenset(args.excluded_taints)
        self._included = frozenset(args.included_taints)

    @classmethod
    def new(cls, args: Any, handle: Handle) -> RemovePodsViolatingNodeTaints:
        return cls(args if isinstance(args, RemovePodsViolatingNodeTaintsArgs)
                   else RemovePodsViolatingNodeTaintsArgs(), handle)

    def name(self) -> str:
        return NAME

    def considered(self, taint: Mapping[str, Any]) -> bool:
        """Whether the plugin enforces ``taint``."""
        return (taint.get("effect") in self._effects and not _named(taint, self._excluded)
                and (not self._included or _named(taint, self._included)))

    def deschedule(self, nodes: Sequence[Obj]) -> Status:
        for node in nodes:
            taints = [t for t in (node.get("spec") or {}).get("taints") or []
                      if self.considered(t)]
            if not taints:
                continue
            for pod in self.handle.pods_on_node(node_name(node)):
                taint = find_untolerated_taint(taints, (pod.get("spec") or {}).get("tolerations"))
                if taint is not None and self._accepts(pod):
                    self.handle.evictor.evict(pod, EvictOptions(
                        plugin_name=NAME, reason=f"pod does not tolerate taint "
                        f"{taint.get('key')}={taint.get('value') or ''}:{taint.get('effect')}"))
        return Status()
