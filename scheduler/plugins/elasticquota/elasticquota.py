"""The ElasticQuota plugin: admits pods within their quota's runtime, preempts within a quota.

Corresponds to koordinator ``pkg/scheduler/plugins/elasticquota/plugin.go`` (with
``plugin_helper.go``). The quota tree is ``core.GroupQuotaManager``, fed by the ElasticQuota,
pod and node informers (``handlers.py``). Extension points (§8.5, §8.6):

* PreFilter: a pod without a quota skips the plugin; otherwise the quota's runtime is refreshed
  (``enableRuntimeQuota``) and used + request must stay within the runtime (or ``max``), a
  non-preemptible pod's non-preemptible used + request within ``min``, and with
  ``enableCheckParentQuota`` every ancestor's used + request within its own limit. The
  snapshot lives in the cycle state; AddPod/RemovePod move its ``used`` while preemption
  simulates evicting pods of the quota.
* PostFilter: the default preemption evaluator with ``preempt.QuotaPreemption`` as policy,
  messages prefixed ``preemption: ``.
* Reserve/Unreserve: the pod's request starts (stops) counting as used at once, before it
  is bound.

With a client, the plugin creates the built-in root, system and default quotas in
``quotaGroupNamespace`` when absent, as upstream, and runs the quota status writer
(``controller.py``: runtime, request, used... written back every second) and the over-use
revocation controller (``quota_overuse_revoke.py``, with ``monitorAllQuotas`` and
``enableRuntimeQuota``) once the tree has been fed every informer's first list. Hook plugins
(``hookPlugins``, the CheckPod step of PreFilter) are not built: configured hooks are logged
and ignored.

Under the ``MultiQuotaTree`` gate each quota tree (label
``quota.scheduling.koordinator.sh/tree-id``, as koord-manager's ElasticQuotaProfiles create
them) is a ``GroupQuotaManager`` of its own (``managers.QuotaManagers``): its total is its root
quota's ``total-resource`` annotation, taken from the default tree's nodes, and a pod is
checked, reserved and preempted for within its quota's tree only. Gate off: one tree.

Beyond upstream: ``explain_pod`` gives a pending pod's why-pending entry its ``quota`` section
(``quota_summary.py``): the path root → quota with each level's figures, the checks that block
the pod and hints about lending and min scaling.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from api.extension.elastic_quota import (
    DEFAULT_QUOTA_NAME,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PARENT,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
    is_pod_non_preemptible,
)
from api.extension.objects import KubeDict, spec_of
from pkg.client.errors import is_already_exists
from pkg.client.informers import wait_for_cache_sync
from pkg.client.resources import ELASTIC_QUOTAS, NODES, PODS
from pkg.features import default_feature_gate
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.events import (
    ELASTIC_QUOTA,
    POD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
)
from scheduler.framework.interface import (
    EnqueueExtensions,
    NodeToStatus,
    PodUpdatingPreFilterExtensions,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
)
from scheduler.framework.plugins.defaultpreemption.evaluator import Evaluator
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.status import Code, Status, unschedulable
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import ExtendedHandle, PodState
from scheduler.plugins.elasticquota.controller import ElasticQuotaController
from scheduler.plugins.elasticquota.core import GroupQuotaManager, ResourceInts
from scheduler.plugins.elasticquota.core.quota_info import mask
from scheduler.plugins.elasticquota.handlers import QuotaTreeFeeder
from scheduler.plugins.elasticquota.managers import QuotaManagers
from scheduler.plugins.elasticquota.preempt import QuotaPreemption
from scheduler.plugins.elasticquota.quota_overuse_revoke import QuotaOverUsedRevokeController
from scheduler.plugins.elasticquota.quota_summary import QuotaChecks, explain
from scheduler.plugins.elasticquota.state import (
    STATE_KEY,
    QuotaCycleState,
    add,
    exceeded,
    print_names,
    print_resource_list,
)

log = logging.getLogger(__name__)

NAME = "ElasticQuota"


class ElasticQuota(PodUpdatingPreFilterExtensions, PreFilterPlugin, PostFilterPlugin,
                   ReservePlugin, EnqueueExtensions):
    name = NAME
    pre_filter_state_key = STATE_KEY

    def __init__(self, args: ElasticQuotaArgs | None, handle: ExtendedHandle) -> None:
        args = args if args is not None else ElasticQuotaArgs()
        errors = args.validate_args()
        if errors:
            raise ValueError("; ".join(str(e) for e in errors))
        super().__init__(args, handle)
        self.args = args
        if args.hook_plugins:
            log.warning("ElasticQuota hookPlugins %s are not implemented in this version and "
                        "are ignored", [h.key for h in args.hook_plugins])
        self.managers = QuotaManagers.from_args(args, default_feature_gate)
        # The default tree (every quota's when MultiQuotaTree is off).
        self.manager = self.managers.default
        self.checks = QuotaChecks(args.enable_runtime_quota, args.enable_check_parent_quota,
                                  args.enable_min_quota_scale)
        self.feeder = QuotaTreeFeeder(self.managers, handle.recorder)
        self.preemption = QuotaPreemption(
            handle, lambda p: self.feeder.quota_of(p.pod), _state_of,
            disable_default_quota_preemption=args.disable_default_quota_preemption)
        self.evaluator = Evaluator(NAME, handle, self.preemption)
        self.status_writer: ElasticQuotaController | None = None
        self.revoker: QuotaOverUsedRevokeController | None = None
        factory = handle.informer_factory
        client = handle.client
        if factory is not None:
            quotas = factory.informer_for(ELASTIC_QUOTAS, typed=False)
            pods = factory.informer_for(PODS, typed=False)
            fed: list[Any] = [  # handler registrations: synced once the tree saw each list
                quotas.add_event_handler(self.feeder.quota_handler()),
                factory.informer_for(NODES, typed=False).add_event_handler(
                    self.feeder.node_handler()),
                pods.add_event_handler(self.feeder.pod_handler())]
            if client is not None:
                self.status_writer = ElasticQuotaController(self.managers, client,
                                                            quotas.lister, handle.clock)
                self.revoker = QuotaOverUsedRevokeController(
                    self.managers, client, pods.indexer, handle.clock, args, handle.recorder)
                # They start once the tree was fed every list, which happens only once the
                # scheduler runs the informers (after winning leader election).
                threading.Thread(target=self._start_controllers, args=(fed,),
                                 name="elasticquota-controllers", daemon=True).start()
        if client is not None:
            # Off the start-up path: the API server may still be coming up.
            threading.Thread(target=self.create_builtin_quotas, name="elasticquota-builtin",
                             daemon=True).start()

    def _start_controllers(self, fed: list[Any]) -> None:
        if not wait_for_cache_sync(*fed):
            return
        for controller in (self.status_writer, self.revoker):
            if controller is not None:
                controller.start()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(POD, ActionType.DELETE)),
                ClusterEventWithHint(ClusterEvent(ELASTIC_QUOTA, ActionType.ALL))]

    # Built-in quotas ---------------------------------------------------------------------

    def builtin_quotas(self) -> list[KubeDict]:
        """Upstream's root, system and default ElasticQuotas."""
        ns = self.args.quota_group_namespace

        def quota(name: str, labels: dict[str, str], max_: dict[str, str] | None) -> KubeDict:
            spec = {"max": max_} if max_ is not None else {}
            return {"apiVersion": ELASTIC_QUOTAS.api_version, "kind": "ElasticQuota",
                    "metadata": {"name": name, "namespace": ns, "labels": labels,
                                 "annotations": {}},
                    "spec": spec}

        return [
            quota(ROOT_QUOTA_NAME, {LABEL_QUOTA_IS_PARENT: "true",
                                    LABEL_ALLOW_LENT_RESOURCE: "false", LABEL_QUOTA_PARENT: ""},
                  None),
            quota(SYSTEM_QUOTA_NAME, {}, dict(self.args.system_quota_group_max)),
            quota(DEFAULT_QUOTA_NAME, {}, dict(self.args.default_quota_group_max)),
        ]

    def create_builtin_quotas(self) -> None:
        client = self.handle.client
        if client is None:
            return
        for quota in self.builtin_quotas():
            name = quota["metadata"]["name"]
            try:
                client.request("POST", ELASTIC_QUOTAS.path(self.args.quota_group_namespace),
                               body=quota)
                log.info("Created the built-in ElasticQuota %s", name)
            except Exception as err:  # noqa: BLE001 - logged; the tree has it built in anyway
                if not is_already_exists(err):
                    log.error("Creating the built-in ElasticQuota %s failed: %s", name, err)

    # PreFilter ---------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   snapshot: Snapshot) -> tuple[PreFilterResult | None, Status | None]:
        name = self.feeder.ensure_pod(pod.pod)
        if not name:
            state.write(STATE_KEY, QuotaCycleState(skip=True))
            return None, Status(Code.SKIP)
        manager = self.managers.for_quota(name)
        # A copy taken under the tree's lock, its runtime refreshed along root → quota.
        quota = manager.quota_summary(name, with_pods=False)
        live = manager.get_quota_info(name)
        if quota is None or live is None:
            return None, Status(Code.ERROR, "Could not find the specified ElasticQuota")
        request = mask(manager.pod_request(pod.pod), quota.max)
        snap = QuotaCycleState(False, frozenset(quota.max), live.pods, request, quota.used,
                               quota.non_preemptible_used,
                               self._used_limit(quota.runtime, quota.max))
        state.write(STATE_KEY, snap)
        dims = exceeded(add(request, snap.used), snap.used_limit)
        if dims:
            return None, unschedulable(
                f"Insufficient quotas, quotaName: {name}, "
                f"runtime: {print_resource_list(snap.used_limit)}, "
                f"used: {print_resource_list(snap.used)}, "
                f"pod's request: {print_resource_list(request)}, "
                f"exceedDimensions: {print_names(dims)}")
        if is_pod_non_preemptible(pod.pod):
            dims = exceeded(add(request, snap.non_preemptible_used), quota.min)
            if dims:
                return None, unschedulable(
                    f"Insufficient non-preemptible quotas, quotaName: {name}, "
                    f"min: {print_resource_list(quota.min)}, "
                    f"nonPreemptibleUsed: {print_resource_list(snap.non_preemptible_used)}, "
                    f"pod's request: {print_resource_list(request)}, "
                    f"exceedDimensions: {print_names(dims)}")
        if self.args.enable_check_parent_quota:
            return None, self._check_ancestors(manager, name, request)
        return None, None

    def _used_limit(self, runtime: ResourceInts, max_: ResourceInts) -> ResourceInts:
        return dict(runtime) if self.args.enable_runtime_quota else dict(max_)

    def _check_ancestors(self, manager: GroupQuotaManager, name: str,
                         request: ResourceInts) -> Status | None:
        """used + request ≤ limit for the quota and each ancestor below the root
        (upstream ``checkQuotaRecursive``)."""
        topo = [name]
        current = name
        while True:
            quota = manager.quota_summary(current, with_pods=False)
            if quota is None:
                return Status(Code.ERROR, f"Could not find the elasticQuota {current}, "
                                          f"quotaNameTopo: {print_names(topo)}")
            limit = self._used_limit(quota.runtime, quota.max)
            dims = exceeded(mask(add(request, quota.used), request), limit)
            if dims:
                return unschedulable(
                    f"Insufficient quotas, quotaNameTopo: {print_names(topo)}, "
                    f"runtime: {print_resource_list(limit)}, "
                    f"used: {print_resource_list(quota.used)}, "
                    f"pod's request: {print_resource_list(request)}, "
                    f"exceedDimensions: {print_names(dims)}")
            if quota.parent == ROOT_QUOTA_NAME or not quota.parent or quota.parent in topo:
                return None
            current = quota.parent
            topo.insert(0, current)

    # Why pending -------------------------------------------------------------------------

    def explain_pod(self, key: str) -> PodState | None:
        """The ``quota`` section of a pending pod's why-pending entry (PodStateExplainer);
        None for a pod of no quota, one on a node or reserved, or one that fits the built-in
        default or system quota (nothing a user configured holds it)."""
        known = self.feeder.known_pod(key)
        if known is None or not known[0] or spec_of(known[1]).get("nodeName"):
            return None
        name = known[0]
        manager = self.managers.for_quota(name)
        live = manager.get_quota_info(name)
        entry = live.pods.get(key) if live is not None else None
        path = manager.path_summary(name)
        if entry is None or entry.assigned or not path:
            return None
        state = explain(key, path, entry.request, entry.non_preemptible, self.checks,
                        manager.children_summary)
        if not state.blocks and name in (DEFAULT_QUOTA_NAME, SYSTEM_QUOTA_NAME):
            return None
        return PodState("quota", state.message(), state.to_dict(), tuple(state.lines()))

    # PostFilter --------------------------------------------------------------------------

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status | None]:
        return self.evaluator.post_filter(state, pod, statuses)

    # Reserve -----------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        name = self.feeder.quota_of(pod.pod)
        if name:
            self.managers.for_quota(name).reserve_pod(name, pod.pod)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        name = self.feeder.quota_of(pod.pod)
        if name:
            self.managers.for_quota(name).unreserve_pod(name, pod.pod)


def _state_of(state: CycleState) -> QuotaCycleState | None:
    snap = state.get(STATE_KEY)
    return snap if isinstance(snap, QuotaCycleState) else None


__all__ = ["NAME", "ElasticQuota"]
