"""The quota trees of the ElasticQuota plugin: which ``GroupQuotaManager`` holds each quota.

Corresponds to koordinator ``pkg/scheduler/plugins/elasticquota/quota_handler.go`` (the
managers per tree, ``quotaToTreeMap``, ``GetGroupQuotaManagerForQuota``,
``handlerQuotaWhenRoot``) and the tree part of ``getPodAssociateQuotaNameAndTreeID``
(``plugin_helper.go``). It owns the default tree, the tree of every quota and, under the
``MultiQuotaTree`` gate, one ``GroupQuotaManager`` per tree id (label
``quota.scheduling.koordinator.sh/tree-id``):

* a quota without a tree id, and the built-in root, system and default quotas, belong to the
  default tree; a quota keeps the tree it was first seen in (upstream forbids moving one);
* the nodes' allocatable feeds the default tree only. A tree's total is its root quota's
  (label ``is-root: "true"``) annotation ``total-resource``, and the default tree gives up the
  same amount unless that quota has label ``ignore-default-tree: "true"``;
* deleting a tree's root quota gives its total back to the default tree. Beyond upstream
  (which drops the tree's manager and with it the tree's other quotas until their next event),
  a tree's manager goes only once it holds no quota: the quotas left keep their pods, with no
  total to share until a root quota comes back.

With the gate off every call goes to the default tree, as before.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Protocol

from api.extension.elastic_quota import (
    ANNOTATION_TOTAL_RESOURCE,
    DEFAULT_QUOTA_NAME,
    LABEL_QUOTA_IGNORE_DEFAULT_TREE,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
    get_quota_tree_id,
    is_tree_root_quota,
)
from api.extension.objects import (
    KubeDict,
    annotations_of,
    is_pod_terminated,
    labels_of,
    name_of,
    namespaced_name,
)
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import MULTI_QUOTA_TREE
from pkg.util.podresources import resource_list
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.plugins.elasticquota.core import GroupQuotaManager, PodEntry, QuotaInfo
from scheduler.plugins.elasticquota.core.quota_info import is_zero

# In every manager, but only the default tree's count.
_BUILTIN = frozenset({ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME, DEFAULT_QUOTA_NAME})


class QuotaSource(Protocol):
    """What the status writer and the revocation controller read of the quota trees."""

    def quota_names(self) -> set[str]: ...

    def quota_summary(self, name: str, *, with_pods: bool = True) -> QuotaInfo | None: ...

    def assigned_pods(self, name: str) -> dict[str, PodEntry]: ...


class QuotaManagers:
    """The default quota tree and, under MultiQuotaTree, one tree per tree id."""

    def __init__(self, default: GroupQuotaManager,
                 new_tree: Callable[[], GroupQuotaManager] | None = None) -> None:
        """``new_tree`` makes a tree's manager; None: one tree (MultiQuotaTree off)."""
        self.default = default
        self._new_tree = new_tree
        self._lock = threading.Lock()
        self._trees: dict[str, GroupQuotaManager] = {}
        # quota name → tree id, for the quotas of other trees than the default
        self._tree_of: dict[str, str] = {}

    @classmethod
    def from_args(cls, args: ElasticQuotaArgs,
                  feature_gate: FeatureGate = default_feature_gate) -> QuotaManagers:
        def new_tree() -> GroupQuotaManager:
            return GroupQuotaManager.from_args(args, feature_gate)

        return cls(new_tree(),
                   new_tree if feature_gate.enabled(MULTI_QUOTA_TREE) else None)

    @property
    def multi_tree(self) -> bool:
        return self._new_tree is not None

    # --- picking a manager -----------------------------------------------------------------

    def tree_of(self, quota_name: str) -> str:
        """The quota's tree id; ``""`` for the default tree (and an unknown quota)."""
        with self._lock:
            return self._tree_of.get(quota_name, "")

    def for_quota(self, quota_name: str) -> GroupQuotaManager:
        """The manager of the quota's tree (the default one for an unknown quota or tree)."""
        if self._new_tree is None:
            return self.default
        with self._lock:
            tree = self._tree_of.get(quota_name, "")
            return self._trees.get(tree, self.default) if tree else self.default

    def trees(self) -> dict[str, GroupQuotaManager]:
        """Every tree's manager by tree id, the default tree as ``""``."""
        with self._lock:
            return {"": self.default, **self._trees}

    # --- quotas ----------------------------------------------------------------------------

    def update_quota(self, quota: KubeDict) -> GroupQuotaManager:
        """Add or change a quota in its tree and, for a tree's root quota, set the tree's
        total; returns the quota's manager. Raises ValueError (nothing changed) for a
        malformed quota or ``total-resource``."""
        name, labels = name_of(quota), labels_of(quota)
        if self._new_tree is None or name in _BUILTIN:
            self.default.update_quota(quota)
            return self.default
        root = is_tree_root_quota(labels)
        total = _total_resource(quota) if root else None
        with self._lock:
            tree = self._tree_of.get(name)
            if tree is None:
                tree = get_quota_tree_id(labels)
            manager = self._trees.get(tree) if tree else self.default
            if manager is None:
                manager = self._trees[tree] = self._new_tree()
        manager.update_quota(quota)
        with self._lock:
            if tree:
                self._tree_of[name] = tree
        if tree and total is not None:
            delta = manager.set_tree_total(total)
            if labels.get(LABEL_QUOTA_IGNORE_DEFAULT_TREE) != "true":
                self.default.add_cluster_total({k: -v for k, v in delta.items()})
        return manager

    def delete_quota(self, quota: KubeDict) -> bool:
        """Remove a quota from its tree; False if unknown or built in. A tree's root quota
        gives the tree's total back to the default tree."""
        name, labels = name_of(quota), labels_of(quota)
        with self._lock:
            tree = self._tree_of.pop(name, "")
            manager = self._trees.get(tree, self.default) if tree else self.default
        deleted = manager.delete_quota(name)
        if not tree:
            return deleted
        if is_tree_root_quota(labels):
            given_back = manager.cluster_total()
            manager.set_tree_total({})
            if not is_zero(given_back) and \
                    labels.get(LABEL_QUOTA_IGNORE_DEFAULT_TREE) != "true":
                self.default.add_cluster_total(given_back)
        with self._lock:
            if manager.quota_names() <= _BUILTIN and self._trees.get(tree) is manager:
                del self._trees[tree]
        return deleted

    def has_quota(self, name: str) -> bool:
        return self.for_quota(name).get_quota_info(name) is not None

    # --- pods ------------------------------------------------------------------------------

    def quota_name_for_pod(self, pod: KubeDict) -> str:
        """The quota a pod is charged to (``GroupQuotaManager.quota_name_for_pod`` over every
        tree): a quota of some tree that its label, namespace or a quota's ``namespaces``
        names, else the default tree's answer."""
        if self._new_tree is None:
            return self.default.quota_name_for_pod(pod)
        with self._lock:
            trees = list(self._trees.values())
        for manager in trees:
            name = manager.quota_name_for_pod(pod)
            if name and name not in _BUILTIN:
                return name
        return self.default.quota_name_for_pod(pod)

    def move_pod(self, old_quota: str, new_quota: str, old_pod: KubeDict,
                 new_pod: KubeDict) -> None:
        """``GroupQuotaManager.on_pod_update`` across trees: a pod reserved but not bound yet
        keeps using whichever quota it is in."""
        old_manager, new_manager = self.for_quota(old_quota), self.for_quota(new_quota)
        if old_manager is new_manager:
            old_manager.on_pod_update(old_quota, new_quota, old_pod, new_pod)
            return
        reserved = namespaced_name(old_pod) in old_manager.assigned_pods(old_quota)
        old_manager.on_pod_delete(old_quota, old_pod)
        new_manager.on_pod_add(new_quota, new_pod)
        if reserved and not is_pod_terminated(new_pod):
            new_manager.reserve_pod(new_quota, new_pod)

    # --- QuotaSource -----------------------------------------------------------------------

    def quota_names(self) -> set[str]:
        """Every tree's quotas (the built-in ones of the default tree only)."""
        names = self.default.quota_names()
        for tree, manager in self.trees().items():
            if tree:
                names |= manager.quota_names() - _BUILTIN
        return names

    def quota_summary(self, name: str, *, with_pods: bool = True) -> QuotaInfo | None:
        return self.for_quota(name).quota_summary(name, with_pods=with_pods)

    def assigned_pods(self, name: str) -> dict[str, PodEntry]:
        return self.for_quota(name).assigned_pods(name)


def _total_resource(quota: KubeDict) -> dict[str, int] | None:
    """The ``total-resource`` annotation (a JSON ResourceList); None when absent."""
    raw = annotations_of(quota).get(ANNOTATION_TOTAL_RESOURCE)
    if not raw:
        return None
    try:
        parsed = json.loads(raw)
        if not isinstance(parsed, dict):
            raise ValueError("not a JSON object")
        return resource_list(parsed)
    except ValueError as err:  # json.JSONDecodeError and unparsable quantities alike
        raise ValueError(f"elastic quota {name_of(quota)}: annotation "
                         f"{ANNOTATION_TOTAL_RESOURCE} {raw!r} is not a resource list: "
                         f"{err}") from err


__all__ = ["QuotaManagers", "QuotaSource"]
