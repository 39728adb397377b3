"""The scheduler's quota tree: pods' demand and use propagated up, runtime handed down.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/core/group_quota_manager.go``
(``GroupQuotaManager``) and the pod → quota rule of the plugin (``getPodAssociateQuotaName``).
It owns the quotas (with the built-in root, system and default quotas), the parent links, one
``RuntimeQuotaCalculator`` per parent, the min scaling, the nodes' allocatable total, and every
pod's charge to its quota.

Every change is incremental: a pod event walks its quota's path to the root once (request and
used deltas, §8.2); ``refresh_runtime`` walks the path root → quota and redistributes only the
calculators whose inputs moved, each over its own children (§8.3, §8.4). A quota added, moved or
deleted is detached from and attached to its parent the same way, so no event rebuilds the whole
tree. One re-entrant lock guards the state; informer threads and the scheduling cycle share it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping

from api.extension.elastic_quota import (
    DEFAULT_QUOTA_NAME,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
    get_quota_name,
    is_pod_non_preemptible,
)
from api.extension.objects import (
    KubeDict,
    is_pod_terminated,
    metadata_of,
    name_of,
    namespaced_name,
    spec_of,
)
from api.meta import parse_timestamp
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import (
    DISABLE_DEFAULT_QUOTA,
    ELASTIC_QUOTA_GUARANTEE_USAGE,
    ELASTIC_QUOTA_IGNORE_POD_OVERHEAD,
)
from pkg.features.scheduler_features import (
    ELASTIC_QUOTA_IGNORE_TERMINATING_POD,
    ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD,
)
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.podresources import pod_requests, resource_list
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.core.quota_info import (
    PodEntry,
    QuotaInfo,
    add_non_negative,
    is_zero,
    mask,
    subtract,
)
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import (
    ResourceInts,
    RuntimeQuotaCalculator,
)
from scheduler.plugins.elasticquota.core.scale_min_quota import ScaleMinQuotaManager

# Children of the root by name only: no share of the redistribution, their runtime is their max.
_OUTSIDE_REDISTRIBUTION = frozenset({SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME})


class GroupQuotaManager:
    """One quota tree (upstream ``GroupQuotaManager``)."""

    def __init__(self, system_group_max: Mapping[str, int], default_group_max: Mapping[str, int],
                 *, scale_min_quota_enabled: bool = True,
                 feature_gate: FeatureGate = default_feature_gate,
                 clock: Clock = REAL_CLOCK) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self._features = feature_gate
        self._scale_min_enabled = scale_min_quota_enabled
        self._quotas: dict[str, QuotaInfo] = {
            ROOT_QUOTA_NAME: QuotaInfo(ROOT_QUOTA_NAME, "", is_parent=True, allow_lent=False),
            SYSTEM_QUOTA_NAME: QuotaInfo(SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME,
                                         max=dict(system_group_max)),
            DEFAULT_QUOTA_NAME: QuotaInfo(DEFAULT_QUOTA_NAME, ROOT_QUOTA_NAME,
                                          max=dict(default_group_max)),
        }
        self._children: dict[str, set[str]] = {}
        self._calculators: dict[str, RuntimeQuotaCalculator] = {
            ROOT_QUOTA_NAME: RuntimeQuotaCalculator(ROOT_QUOTA_NAME)}
        self._scale_min = ScaleMinQuotaManager()
        # parent → (its runtime, its children's min version) the children were scaled for
        self._scaled_at: dict[str, tuple[tuple[tuple[str, int], ...], int]] = {}
        # How many redistributed quotas name each resource in their max.
        self._key_refs: Counter[str] = Counter()
        self._total: ResourceInts = {}
        self._total_except_system_and_default_used: ResourceInts = {}
        self._nodes: dict[str, ResourceInts] = {}
        # namespace → quota, from the quotas' ``namespaces`` annotations
        self._namespace_quota: dict[str, str] = {}

    @classmethod
    def from_args(cls, args: ElasticQuotaArgs,
                  feature_gate: FeatureGate = default_feature_gate) -> GroupQuotaManager:
        """The tree the ElasticQuota plugin's configuration describes."""
        return cls(resource_list(args.system_quota_group_max),
                   resource_list(args.default_quota_group_max),
                   scale_min_quota_enabled=args.enable_min_quota_scale, feature_gate=feature_gate)

    # --- reading ---------------------------------------------------------------------------

    def get_quota_info(self, name: str) -> QuotaInfo | None:
        """The live quota (callers must not mutate it)."""
        return self._quotas.get(name)

    def quota_summary(self, name: str, *, with_pods: bool = True) -> QuotaInfo | None:
        """A copy of the quota with its runtime refreshed (what the status writer and debug
        endpoints read, upstream ``GetQuotaSummary``); None for an unknown quota."""
        with self._lock:
            quota = self._quotas.get(name)
            if quota is None:
                return None
            runtime = self.refresh_runtime(name)
            summary = quota.copy(with_pods=with_pods)
            summary.runtime = runtime or {}
            return summary

    def path_summary(self, name: str) -> list[QuotaInfo]:
        """``quota_summary`` of the quota and each ancestor, root first, taken under one hold
        of the lock so that the levels agree (the why-pending explanation); empty for an
        unknown quota."""
        with self._lock:
            return [s for q in reversed(self._path(name))
                    if (s := self.quota_summary(q.name, with_pods=False)) is not None]

    def children_summary(self, name: str) -> list[QuotaInfo]:
        """Copies (no pods, runtime as last computed) of the quota's children, by name."""
        with self._lock:
            return [self._quotas[c].copy(with_pods=False)
                    for c in sorted(self._children.get(name, ())) if c in self._quotas]

    def assigned_pods(self, name: str) -> dict[str, PodEntry]:
        """Copies of the entries of the quota's own pods that use it (on a node or reserved),
        by ``namespace/name``; empty for an unknown quota (what over-use revocation picks
        from, upstream ``GetPodThatIsAssigned``)."""
        with self._lock:
            quota = self._quotas.get(name)
            if quota is None:
                return {}
            return {key: PodEntry(dict(p.request), p.non_preemptible, p.assigned)
                    for key, p in quota.pods.items() if p.assigned}

    def quota_names(self) -> set[str]:
        with self._lock:
            return set(self._quotas)

    def children_of(self, name: str) -> set[str]:
        with self._lock:
            return set(self._children.get(name, ()))

    def cluster_total(self) -> ResourceInts:
        """Σ node allocatable."""
        with self._lock:
            return dict(self._total)

    def resource_keys(self) -> frozenset[str]:
        """The resources the runtime is computed for (names in any quota's max)."""
        with self._lock:
            return frozenset(k for k, n in self._key_refs.items() if n > 0)

    def quota_name_for_pod(self, pod: KubeDict) -> str:
        """The quota a pod is charged to (§8.1); ``""`` when none and the default is disabled.

        Its ``quota.scheduling.koordinator.sh/name`` label; else the quota named as its
        namespace in that namespace; else the quota whose ``namespaces`` annotation lists the
        namespace; else ``koordinator-default-quota``. A name in no tree means the default.
        """
        with self._lock:
            name = get_quota_name(pod)
            namespace = metadata_of(pod).get("namespace") or ""
            if not name:
                same = self._quotas.get(namespace)
                if same is not None and same.namespace == namespace:
                    name = namespace
                else:
                    name = self._namespace_quota.get(namespace, "")
            if name and name in self._quotas:
                return name
            return "" if self._features.enabled(DISABLE_DEFAULT_QUOTA) else DEFAULT_QUOTA_NAME

    # --- runtime ---------------------------------------------------------------------------

    def refresh_runtime(self, name: str) -> ResourceInts | None:
        """The quota's runtime, masked to its max names; None for an unknown quota.

        Recomputes along root → quota: each level's min scaling against its parent's runtime,
        then the parent calculator's redistribution when any of its inputs changed.
        """
        with self._lock:
            quota = self._quotas.get(name)
            if quota is None:
                return None
            if name == ROOT_QUOTA_NAME:
                return dict(self._total_except_system_and_default_used)
            if name in _OUTSIDE_REDISTRIBUTION:
                return dict(quota.max)
            path = self._path(name)
            # An orphan's missing parent has nothing to share.
            total: ResourceInts = self._total_except_system_and_default_used \
                if path[-1].name == ROOT_QUOTA_NAME else {}
            for i in range(len(path) - 1, -1, -1):
                q = path[i]
                if q.name == ROOT_QUOTA_NAME:
                    continue
                calculator = self._calculators.get(q.parent)
                if calculator is None:
                    return None
                if self._scale_min_enabled:
                    self._scale_children(q.parent, calculator, total)
                if q.runtime_version != calculator.version:
                    q.runtime.update(calculator.runtime_of(q.name))
                    q.runtime_version = calculator.version
                if i > 0:
                    self._calculators[q.name].set_total(q.runtime)
                total = q.runtime
            return quota.masked_runtime()

    def _scale_children(self, parent: str, calculator: RuntimeQuotaCalculator,
                        total: ResourceInts) -> None:
        """§8.4 for all children of ``parent`` at once, when its runtime or their mins moved.

        Scaling siblings together (upstream scales only the quota on the refreshed path) makes
        a runtime independent of which sibling was refreshed first.
        """
        key = (tuple(sorted(total.items())), self._scale_min.versions.get(parent, 0))
        if self._scaled_at.get(parent) == key:
            return
        self._scaled_at[parent] = key
        for name in self._children.get(parent, ()):
            child = self._quotas.get(name)
            scaled = self._scale_min.scaled_min(total, parent, name)
            if child is not None and scaled is not None and scaled != child.auto_scale_min:
                child.auto_scale_min = scaled
                calculator.update_member(child)

    # --- quotas ----------------------------------------------------------------------------

    def update_quota(self, quota: ElasticQuota | KubeDict) -> None:
        """Add or change a quota; raises ValueError (state unchanged) for a malformed one."""
        new = QuotaInfo.from_quota(
            quota, guarantee_usage=self._features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE))
        with self._lock:
            old = self._quotas.get(new.name)
            if new.name == ROOT_QUOTA_NAME:
                return
            if new.name in _OUTSIDE_REDISTRIBUTION:
                new.parent = ROOT_QUOTA_NAME  # by name only, whatever its labels say
            if old is not None:
                if old.config_equals(new):
                    return
                self._detach(old)
                new.pods = old.pods
            self._quotas[new.name] = new
            self._recount_self(new)
            self._attach(new)

    def delete_quota(self, name: str) -> bool:
        """Remove a quota (its pods go with it); False if unknown or built in."""
        with self._lock:
            quota = self._quotas.get(name)
            if quota is None or name in _OUTSIDE_REDISTRIBUTION or name == ROOT_QUOTA_NAME:
                return False
            self._detach(quota)
            del self._quotas[name]
            if not self._children.get(name):
                # Orphaned children keep theirs: they come back when the quota does.
                self._calculators.pop(name, None)
            return True

    def _path(self, name: str) -> list[QuotaInfo]:
        """The quota and its ancestors up to the root (shorter when a parent is missing).

        A parent cycle (which the webhook refuses, but a store may still hold) ends the path
        where it closes, so no walk loops.
        """
        path: list[QuotaInfo] = []
        seen: set[str] = set()
        quota = self._quotas.get(name)
        while quota is not None and quota.name not in seen:
            path.append(quota)
            seen.add(quota.name)
            if quota.name == ROOT_QUOTA_NAME:
                break
            quota = self._quotas.get(quota.parent)
        return path

    def _recount_self(self, quota: QuotaInfo) -> None:
        """Own pods' request and used, masked to the (possibly new) max names."""
        quota.self_request, quota.self_used = {}, {}
        quota.self_non_preemptible_request, quota.self_non_preemptible_used = {}, {}
        for pod in quota.pods.values():
            counted = mask(pod.request, quota.max)
            add_non_negative(quota.self_request, counted)
            if pod.non_preemptible:
                add_non_negative(quota.self_non_preemptible_request, counted)
            if pod.assigned:
                add_non_negative(quota.self_used, counted)
                if pod.non_preemptible:
                    add_non_negative(quota.self_non_preemptible_used, counted)

    def _attach(self, quota: QuotaInfo) -> None:
        """Hang a quota under its parent: sum its children, join the parent's calculator,
        pass its request and use up."""
        redistributed = quota.name not in _OUTSIDE_REDISTRIBUTION
        if redistributed:
            self._children.setdefault(quota.parent, set()).add(quota.name)
            self._namespace_quota.update({ns: quota.name for ns in quota.namespaces})
            if quota.name not in self._calculators:
                self._calculators[quota.name] = self._new_calculator(quota.name)
            if quota.parent not in self._calculators:
                self._calculators[quota.parent] = self._new_calculator(quota.parent)
            self._ref_keys(quota.max, 1)
        # Children may have arrived before their parent: sum what is already there.
        guarantee_usage = redistributed and \
            self._features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE)
        keys = self._keys()
        quota.allocated = {k: v for k, v in quota.self_used.items() if k in keys} \
            if guarantee_usage else {}
        quota.child_request = dict(quota.self_request)
        quota.used = dict(quota.self_used)
        quota.non_preemptible_request = dict(quota.self_non_preemptible_request)
        quota.non_preemptible_used = dict(quota.self_non_preemptible_used)
        for child_name in self._children.get(quota.name, ()):
            child = self._quotas.get(child_name)
            if child is not None:
                add_non_negative(quota.child_request, child.limited_request())
                add_non_negative(quota.used, child.used)
                add_non_negative(quota.non_preemptible_request, child.non_preemptible_request)
                add_non_negative(quota.non_preemptible_used, child.non_preemptible_used)
                if guarantee_usage:
                    add_non_negative(quota.allocated, child.guaranteed)
        quota.request = quota.real_request()
        quota.runtime, quota.runtime_version = {}, 0
        if redistributed:
            self._update_guaranteed(quota)
            self._scale_min.update(quota.parent, quota.name, quota.min, self._scale_min_enabled)
            quota.auto_scale_min = dict(quota.min)
            self._calculators[quota.parent].update_member(quota)
        self._propagate_request(quota.parent, quota.limited_request(),
                                quota.non_preemptible_request, own=False)
        self._propagate_used(quota.parent, quota.used, quota.non_preemptible_used, own=False)
        self._propagate_allocated(quota.parent, quota.guaranteed)
        if not redistributed:
            self._update_total_except()

    def _detach(self, quota: QuotaInfo) -> None:
        """Undo ``_attach``: the parent path forgets the quota's request and use."""
        self._propagate_request(quota.parent, _negate(quota.limited_request()),
                                _negate(quota.non_preemptible_request), own=False)
        self._propagate_used(quota.parent, _negate(quota.used),
                             _negate(quota.non_preemptible_used), own=False)
        self._propagate_allocated(quota.parent, _negate(quota.guaranteed))
        if quota.name in _OUTSIDE_REDISTRIBUTION:
            return
        calculator = self._calculators.get(quota.parent)
        if calculator is not None:
            calculator.delete_member(quota.name)
        self._scale_min.delete(quota.parent, quota.name)
        self._children.get(quota.parent, set()).discard(quota.name)
        for ns in quota.namespaces:
            if self._namespace_quota.get(ns) == quota.name:
                del self._namespace_quota[ns]
        self._ref_keys(quota.max, -1)

    def _new_calculator(self, name: str) -> RuntimeQuotaCalculator:
        calculator = RuntimeQuotaCalculator(name)
        calculator.update_resource_keys(self._keys())
        return calculator

    def _keys(self) -> frozenset[str]:
        return frozenset(k for k, n in self._key_refs.items() if n > 0)

    def _ref_keys(self, names: Iterable[str], step: int) -> None:
        before = self._keys()
        self._key_refs.update({name: step for name in names})
        after = self._keys()
        if after == before:
            return
        # A new dimension: every calculator computes it, for every child it already has.
        for calculator in self._calculators.values():
            calculator.update_resource_keys(after)
        for q in self._quotas.values():
            parent = self._calculators.get(q.parent)
            if parent is not None and parent.has_member(q.name):
                parent.update_member(q)

    # --- propagation -----------------------------------------------------------------------

    def _propagate_request(self, name: str, delta: Mapping[str, int],
                           delta_non_preemptible: Mapping[str, int], *, own: bool) -> None:
        """Add a request delta at ``name`` (its own pods' when ``own``) and pass the change of
        each level's limited request on to its parent."""
        delta = dict(delta)
        for i, quota in enumerate(self._path(name)):
            if is_zero(delta) and is_zero(delta_non_preemptible):
                return
            if own and i == 0:
                add_non_negative(quota.self_request, delta)
                add_non_negative(quota.self_non_preemptible_request, delta_non_preemptible)
            add_non_negative(quota.non_preemptible_request, delta_non_preemptible)
            if quota.name == ROOT_QUOTA_NAME:
                add_non_negative(quota.request, delta)
                return
            old_limited = quota.limited_request()
            add_non_negative(quota.child_request, delta)
            quota.request = quota.real_request()
            delta = subtract(quota.limited_request(), old_limited)
            if quota.name not in _OUTSIDE_REDISTRIBUTION:
                calculator = self._calculators.get(quota.parent)
                if calculator is not None:
                    calculator.update_member(quota)

    def _propagate_used(self, name: str, delta: Mapping[str, int],
                        delta_non_preemptible: Mapping[str, int], *, own: bool) -> None:
        if is_zero(delta) and is_zero(delta_non_preemptible):
            return
        path = self._path(name)
        for i, quota in enumerate(path):
            if own and i == 0:
                add_non_negative(quota.self_used, delta)
                add_non_negative(quota.self_non_preemptible_used, delta_non_preemptible)
            add_non_negative(quota.used, delta)
            add_non_negative(quota.non_preemptible_used, delta_non_preemptible)
        if name in _OUTSIDE_REDISTRIBUTION:
            self._update_total_except()

    def _propagate_allocated(self, name: str, delta: Mapping[str, int]) -> None:
        """ElasticQuotaGuaranteeUsage: add to ``name``'s allocated and pass each level's change
        of guarantee on to its parent."""
        if not self._features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE):
            return
        for quota in self._path(name):
            if is_zero(delta):
                return
            old = dict(quota.guaranteed)
            add_non_negative(quota.allocated, delta)
            if quota.name == ROOT_QUOTA_NAME:
                return
            self._update_guaranteed(quota)
            delta = subtract(quota.guaranteed, old)

    def _update_guaranteed(self, quota: QuotaInfo) -> None:
        """guarantee = max(min, allocated) under ElasticQuotaGuaranteeUsage, else nothing."""
        if not self._features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE):
            return
        guaranteed = dict(quota.allocated)
        for k, v in quota.min.items():
            guaranteed[k] = max(v, guaranteed.get(k, 0))
        quota.guaranteed = guaranteed
        calculator = self._calculators.get(quota.parent)
        if calculator is not None and calculator.has_member(quota.name):
            calculator.update_member(quota)

    # --- nodes -----------------------------------------------------------------------------

    def _update_total_except(self) -> None:
        used = dict(self._quotas[SYSTEM_QUOTA_NAME].used)
        add_non_negative(used, self._quotas[DEFAULT_QUOTA_NAME].used)
        self._total_except_system_and_default_used = subtract(self._total, used)
        self._calculators[ROOT_QUOTA_NAME].set_total(self._total_except_system_and_default_used)

    def _set_node(self, name: str, allocatable: ResourceInts | None) -> None:
        old = self._nodes.pop(name, {})
        if allocatable is not None:
            self._nodes[name] = allocatable
        delta = subtract(allocatable or {}, old)
        if is_zero(delta):
            return
        self._add_total(delta)

    def _add_total(self, delta: Mapping[str, int]) -> None:
        for k, v in delta.items():
            self._total[k] = self._total.get(k, 0) + v
        self._update_total_except()

    def add_cluster_total(self, delta: Mapping[str, int]) -> None:
        """Add to the cluster total beyond the nodes' allocatable (MultiQuotaTree: the default
        tree gives up what a tree's root quota takes, upstream ``UpdateClusterTotalResource``)."""
        with self._lock:
            if not is_zero(delta):
                self._add_total(delta)

    def set_tree_total(self, total: Mapping[str, int]) -> ResourceInts:
        """Set a quota tree's total (its root quota's ``total-resource``); returns the change
        (upstream ``SetTotalResourceForTree``)."""
        with self._lock:
            delta = subtract(total, self._total)
            self.add_cluster_total(delta)
            return delta

    def on_node_add(self, node: KubeDict) -> None:
        self.on_node_update(None, node)

    def on_node_update(self, old: KubeDict | None, new: KubeDict) -> None:
        allocatable = resource_list((new.get("status") or {}).get("allocatable"))
        with self._lock:
            self._set_node(name_of(new), allocatable)

    def on_node_delete(self, node: KubeDict) -> None:
        with self._lock:
            self._set_node(name_of(node), None)

    # --- pods ------------------------------------------------------------------------------

    def pod_request(self, pod: KubeDict) -> ResourceInts:
        """What a pod asks of its quota before masking (upstream ``PodRequests``): its
        requests, less its overhead under ElasticQuotaIgnorePodOverhead."""
        request = pod_requests(pod)
        if self._features.enabled(ELASTIC_QUOTA_IGNORE_POD_OVERHEAD):
            for k, v in resource_list(spec_of(pod).get("overhead")).items():
                request[k] = request.get(k, 0) - v
        return request

    def _pod_entry(self, pod: KubeDict, assigned: bool = False) -> PodEntry:
        return PodEntry(self.pod_request(pod), is_pod_non_preemptible(pod), assigned)

    def _charge(self, quota: QuotaInfo, entry: PodEntry, sign: int, *, request: bool,
                used: bool) -> None:
        counted = mask(entry.request, quota.max)
        if sign < 0:
            counted = _negate(counted)
        non_preemptible = counted if entry.non_preemptible else {}
        if request:
            self._propagate_request(quota.name, counted, non_preemptible, own=True)
        if used:
            self._propagate_used(quota.name, counted, non_preemptible, own=True)
            if self._features.enabled(ELASTIC_QUOTA_GUARANTEE_USAGE):
                keys = self._keys()
                self._propagate_allocated(quota.name,
                                          {k: v for k, v in counted.items() if k in keys})

    def _ignored(self, pod: KubeDict) -> bool:
        """A terminating pod no longer counts: at once under
        ElasticQuotaImmediateIgnoreTerminatingPod, after its grace period under
        ElasticQuotaIgnoreTerminatingPod (upstream ``shouldBeIgnored``)."""
        md = metadata_of(pod)
        deleted = parse_timestamp(md.get("deletionTimestamp"))
        if deleted is None:
            return False
        if self._features.enabled(ELASTIC_QUOTA_IMMEDIATE_IGNORE_TERMINATING_POD):
            return True
        if not self._features.enabled(ELASTIC_QUOTA_IGNORE_TERMINATING_POD):
            return False
        return self._clock.now() > deleted + (md.get("deletionGracePeriodSeconds") or 0)

    def _add_pod(self, quota: QuotaInfo, pod: KubeDict) -> None:
        entry = self._pod_entry(pod)
        quota.pods[namespaced_name(pod)] = entry
        self._charge(quota, entry, 1, request=True, used=False)
        if spec_of(pod).get("nodeName") and not is_pod_terminated(pod):
            entry.assigned = True
            self._charge(quota, entry, 1, request=False, used=True)

    def _remove_pod(self, quota: QuotaInfo, key: str) -> None:
        entry = quota.pods.pop(key)
        self._charge(quota, entry, -1, request=True, used=entry.assigned)

    def on_pod_add(self, quota_name: str, pod: KubeDict) -> None:
        """A pod of the quota became known: request now, used too if already on a node."""
        with self._lock:
            quota = self._quotas.get(quota_name)
            if quota is not None and namespaced_name(pod) not in quota.pods and \
                    not self._ignored(pod):
                self._add_pod(quota, pod)

    def on_pod_update(self, old_quota_name: str, new_quota_name: str, old_pod: KubeDict,
                      new_pod: KubeDict) -> None:
        """A pod changed: resize its charge, start its use once bound, or move it."""
        with self._lock:
            old_key, new_key = namespaced_name(old_pod), namespaced_name(new_pod)
            old_quota = self._quotas.get(old_quota_name)
            if old_quota_name != new_quota_name or old_key != new_key:
                reserved = False
                if old_quota is not None and old_key in old_quota.pods:
                    reserved = old_quota.pods[old_key].assigned
                    self._remove_pod(old_quota, old_key)
                self.on_pod_add(new_quota_name, new_pod)
                if reserved and not is_pod_terminated(new_pod):
                    # Reserved, not bound yet: it keeps using whichever quota it is in.
                    self._set_assigned(new_quota_name, new_pod, True)
                return
            if old_quota is None:
                return
            if self._ignored(new_pod):
                if new_key in old_quota.pods:
                    self._remove_pod(old_quota, new_key)
                return
            entry = old_quota.pods.get(new_key)
            if entry is None:
                # The pod arrived before its quota.
                self._add_pod(old_quota, new_pod)
                return
            new_entry = self._pod_entry(new_pod, entry.assigned)
            old_quota.pods[new_key] = new_entry
            if (new_entry.request, new_entry.non_preemptible) != \
                    (entry.request, entry.non_preemptible):
                self._charge(old_quota, entry, -1, request=True, used=entry.assigned)
                self._charge(old_quota, new_entry, 1, request=True, used=entry.assigned)
            if not new_entry.assigned and spec_of(new_pod).get("nodeName") and \
                    not is_pod_terminated(new_pod):
                new_entry.assigned = True
                self._charge(old_quota, new_entry, 1, request=False, used=True)

    def on_pod_delete(self, quota_name: str, pod: KubeDict) -> None:
        with self._lock:
            quota = self._quotas.get(quota_name)
            key = namespaced_name(pod)
            if quota is not None and key in quota.pods:
                self._remove_pod(quota, key)

    def reserve_pod(self, quota_name: str, pod: KubeDict) -> None:
        """The scheduler reserved a node for a known pod: it uses its quota from now on."""
        self._set_assigned(quota_name, pod, True)

    def unreserve_pod(self, quota_name: str, pod: KubeDict) -> None:
        self._set_assigned(quota_name, pod, False)

    def _set_assigned(self, quota_name: str, pod: KubeDict, assigned: bool) -> None:
        with self._lock:
            quota = self._quotas.get(quota_name)
            entry = quota.pods.get(namespaced_name(pod)) if quota is not None else None
            if quota is None or entry is None or entry.assigned == assigned:
                return
            entry.assigned = assigned
            self._charge(quota, entry, 1 if assigned else -1, request=False, used=True)


def _negate(rl: Mapping[str, int]) -> ResourceInts:
    return {k: -v for k, v in rl.items()}


__all__ = ["GroupQuotaManager"]
