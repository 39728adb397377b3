"""ScaleDownBinPack: ranks the selected (target) pods so that scaling their workloads down
empties whole nodes, then writes the ranks as pod deletion costs (``CalculateOnly``) or evicts
the first ``maxPodsToEvict`` ranked pods (``EvictDirectly``).

Corresponds to koordinator ``pkg/descheduler/framework/plugins/scaledownbinpack/
scale_down_binpack.go`` and ``executor.go``. Among the running pods of the selected nodes,
eligible targets pass the namespaces, pod selectors and the framework's filters; pods the
selectors match but the rest refuse are skipped targets (deletion cost ``2147483647``, deleted
last); the others are non-target load that makes a node costly to empty (``ranker.py``).
Nodes without eligible targets are left out. In the descheduler's dry run nothing is patched
or evicted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from api.extension.objects import is_pod_terminated
from api.extension.objects import namespaced_name as pod_key
from descheduler.apis.config.args import SCALE_DOWN_EVICT_DIRECTLY, ScaleDownBinPackArgs
from descheduler.framework.plugins.scaledownbinpack.ranker import NodePods, RankedPod, rank_pods
from descheduler.framework.plugins.selection import PodSelection, select_nodes
from descheduler.framework.types import EvictOptions, Handle, Obj, Status
from descheduler.utils.sorter import ANNOTATION_POD_DELETION_COST
from pkg.client.errors import ApiError
from pkg.client.resources import PODS

log = logging.getLogger(__name__)

NAME = "ScaleDownBinPack"
# math.MaxInt32: skipped targets are deleted last if a scale-down must take them.
SKIPPED_DELETION_COST = 2**31 - 1


class ScaleDownBinPack:
    def __init__(self, args: ScaleDownBinPackArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle
        self.pod_filter = PodSelection(handle.evictor, args.evictable_namespaces,
                                       args.pod_selectors)
        # A selector entry without a selector makes every pod a target.
        self._all_targets = any(s.selector is None for s in args.pod_selectors)
        self.ranked: list[RankedPod] = []

    @classmethod
    def new(cls, args: Any, handle: Handle) -> ScaleDownBinPack:
        return cls(args if isinstance(args, ScaleDownBinPackArgs) else ScaleDownBinPackArgs(),
                   handle)

    def name(self) -> str:
        return NAME

    def _is_target(self, pod: Obj) -> bool:
        return self._all_targets or self.pod_filter.selected(pod)

    def balance(self, nodes: Sequence[Obj]) -> Status:
        if self.args.paused:
            log.info("ScaleDownBinPack is paused and will do nothing.")
            return Status()
        selected = select_nodes(nodes, self.args.node_selector)
        if not selected:
            log.debug("No nodes selected for ScaleDownBinPack")
            return Status()
        candidates = []
        for node in selected:
            info = NodePods(node)
            for pod in self.handle.pods_on_node(info.name):
                if is_pod_terminated(pod):
                    continue
                if self.pod_filter(pod):
                    info.eligible.append(pod)
                elif self._is_target(pod):
                    info.skipped.append(pod)
                else:
                    info.non_target.append(pod)
            if info.eligible:
                candidates.append(info)
        if not candidates:
            log.debug("No eligible target pods found for ScaleDownBinPack")
            return Status()
        self.ranked = rank_pods(candidates, self.args.resource_weights)
        skipped = [p for info in candidates for p in info.skipped]
        log.debug("ScaleDownBinPack ranking complete: eligiblePods %d, skippedPods %d, "
                  "nonTargetPods %d, candidateNodes %d, rankedPods %d",
                  sum(len(i.eligible) for i in candidates), len(skipped),
                  sum(len(i.non_target) for i in candidates), len(candidates), len(self.ranked))
        if self.args.strategy == SCALE_DOWN_EVICT_DIRECTLY:
            return self._evict(self.ranked)
        return self._patch_deletion_costs(self.ranked, skipped)

    def _patch_deletion_costs(self, ranked: list[RankedPod], skipped: list[Obj]) -> Status:
        if self.handle.dry_run:
            log.debug("DryRun: would patch deletion costs: rankedPods %d, skippedPods %d",
                      len(ranked), len(skipped))
            return Status()
        failed = 0
        costs = [(r.pod, r.rank, "ranked") for r in ranked]
        costs += [(pod, SKIPPED_DELETION_COST, "skipped") for pod in skipped]
        client = self.handle.services.kube_client
        for pod, cost, kind in costs:
            md = pod.get("metadata") or {}
            try:
                client.patch(PODS, md.get("name") or "", {"metadata": {"annotations": {
                    ANNOTATION_POD_DELETION_COST: str(cost)}}}, md.get("namespace"))
            except ApiError as err:
                failed += 1
                log.error("Failed to patch pod deletion cost for %s pod %s: %s", kind,
                          pod_key(pod), err)
        return Status([f"failed to patch {failed} pods"] if failed else [])

    def _evict(self, ranked: list[RankedPod]) -> Status:
        if self.handle.dry_run:
            log.debug("DryRun: would evict ranked pods: rankedPods %d", len(ranked))
            return Status()
        limit = self.args.max_pods_to_evict or 0
        evicted = 0
        for r in ranked:
            if limit > 0 and evicted >= limit:
                log.debug("Reached maximum number of pods to evict: maxPods %d", limit)
                break
            if self.handle.evictor.evict(r.pod, EvictOptions(NAME, "scale-down binpack")):
                evicted += 1
        return Status()
