"""The webhook's quota tree and the rules a new, changed or deleted ElasticQuota must keep.

Corresponds to upstream ``pkg/webhook/elasticquota/quota_topology.go`` and
``quota_topology_check.go``; the feeding is ``quota_handler.go``'s. The tree (name → info,
parent → children seeded with ``koordinator-root-quota``, namespace → quota) is built only from
the informer's add/update/delete events: unlike upstream, whose ``ValidAddQuota`` also inserts,
admission only checks against it, so a dry run, a forged review or a create that a later
admission step refuses leaves no phantom quota behind. Every rule raises ``QuotaError`` with
upstream's message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.elastic_quota import (
    ANNOTATION_QUOTA_NAMESPACES,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
    ROOT_QUOTA_NAME,
    SYSTEM_QUOTA_NAME,
    get_parent_quota_name,
    get_quota_tree_id,
    is_allow_force_update,
    is_parent_quota,
    is_tree_root_quota,
    parse_max_strict_check_resource_keys,
    parse_quota_namespaces,
    parse_shared_weight,
)
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import ELASTIC_QUOTA_ENABLE_UPDATE_RESOURCE_KEY

Obj = dict[str, Any]


class QuotaError(Exception):
    """A quota breaks a tree rule; the webhook answers 400 with this text."""


def _resources(values: Mapping[str, Any] | None, where: str) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for k, v in (values or {}).items():
        try:
            out[k] = quantity_value(v)
        except (ValueError, ArithmeticError):
            raise QuotaError(f"{where}: invalid quantity {v!r} for {k}") from None
    return out


def _fmt(value: Decimal) -> str:
    return format(value.normalize(), "f")


@dataclass(slots=True)
class QuotaInfo:
    name: str
    parent: str
    is_parent: bool
    tree_id: str
    is_root: bool
    allow_force_update: bool
    min: dict[str, Decimal]
    max: dict[str, Decimal]
    shared_weight: dict[str, Decimal] | None
    namespaces: list[str]
    used: dict[str, Decimal]
    strict_keys: list[str]

    @classmethod
    def from_quota(cls, quota: Obj) -> QuotaInfo:
        md = quota.get("metadata") or {}
        name = md.get("name", "")
        labels = md.get("labels") or {}
        annotations = md.get("annotations") or {}
        spec, status = quota.get("spec") or {}, quota.get("status") or {}
        try:
            weight = parse_shared_weight(annotations)
            namespaces = parse_quota_namespaces(annotations)
            strict = parse_max_strict_check_resource_keys(annotations)
        except MalformedValueError as e:
            raise QuotaError(f"quota {name}: {e}") from None
        return cls(name=name, parent=get_parent_quota_name(name, labels),
                   is_parent=is_parent_quota(labels), tree_id=get_quota_tree_id(labels),
                   is_root=is_tree_root_quota(labels),
                   allow_force_update=is_allow_force_update(labels),
                   min=_resources(spec.get("min"), f"quota {name} spec.min"),
                   max=_resources(spec.get("max"), f"quota {name} spec.max"),
                   shared_weight=(_resources(weight, f"quota {name} shared-weight")
                                  if weight is not None else None),
                   namespaces=namespaces,
                   used=_resources(status.get("used"), f"quota {name} status.used"),
                   strict_keys=strict)


def validate_self(q: QuotaInfo) -> None:
    """``validateQuotaSelfItem``: non-negative values, min within max, strict keys."""
    for label, values in (("Max", q.max), ("Min", q.min)):
        neg = sorted(k for k, v in values.items() if v < 0)
        if neg:
            raise QuotaError(f"{q.name} quota.Spec.{label}'s value < 0, in dimensions "
                             f":[{' '.join(neg)}]")
    neg = sorted(k for k, v in (q.shared_weight or {}).items() if v < 0)
    if neg:
        raise QuotaError(f"{q.name} quota.Annotation[quota.scheduling.koordinator.sh/"
                         f"shared-weight]'s value < 0, in dimension :[{' '.join(neg)}]")
    for k, v in q.min.items():
        if k not in q.max:
            raise QuotaError(f"resourceKey {k} of quota {q.name} is included in min, which is "
                             f"not included in max")
        if q.max[k] < v:
            raise QuotaError(f"resourceKey {k} of quota {q.name} min {_fmt(v)} > max "
                             f"{_fmt(q.max[k])}")
    for k in q.strict_keys:
        if k in q.used:
            if k not in q.max:
                raise QuotaError(f"resourceKey {k} of quota {q.name} max is not set, but used "
                                 f"{_fmt(q.used[k])}")
            if q.max[k] < q.used[k]:
                raise QuotaError(f"resourceKey {k} of quota {q.name} max {_fmt(q.max[k])} < "
                                 f"used {_fmt(q.used[k])}")


@dataclass
class QuotaTopology:
    """The quota tree. ``pods_of`` lists the pods bound to a quota (for is-parent and delete
    checks): pods labelled with it, in a namespace named like it, or in its namespaces.
    ``exists`` asks the API server whether a quota of that name is stored (None: it could
    not tell), for ``settle``."""

    pods_of: Callable[[QuotaInfo], list[str]] = lambda _q: []
    gate: FeatureGate = default_feature_gate
    exists: Callable[[str], bool | None] | None = None
    infos: dict[str, QuotaInfo] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=lambda: {ROOT_QUOTA_NAME: set()})
    namespace_to_quota: dict[str, str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)

    # --- feeding ---------------------------------------------------------------------------

    def _insert(self, q: QuotaInfo) -> None:
        old = self.infos.get(q.name)
        if old is not None:
            self.children.get(old.parent, set()).discard(q.name)
            for ns in old.namespaces:
                if self.namespace_to_quota.get(ns) == q.name:
                    del self.namespace_to_quota[ns]
        self.infos[q.name] = q
        self.children.setdefault(q.parent, set()).add(q.name)
        self.children.setdefault(q.name, set())
        for ns in q.namespaces:
            self.namespace_to_quota[ns] = q.name

    def _remove(self, name: str) -> None:
        old = self.infos.pop(name, None)
        if old is None:
            return
        self.children.get(old.parent, set()).discard(name)
        for ns in old.namespaces:
            if self.namespace_to_quota.get(ns) == name:
                del self.namespace_to_quota[ns]

    def on_add_or_update(self, quota: Obj) -> None:
        """Informer feed: take the stored quota as it is (it was validated when written)."""
        try:
            q = QuotaInfo.from_quota(quota)
        except QuotaError:
            return
        with self.lock:
            self._insert(q)
            self.changed.notify_all()

    def on_delete(self, quota: Obj) -> None:
        with self.lock:
            self._remove((quota.get("metadata") or {}).get("name", ""))
            self.changed.notify_all()

    def settle(self, expected: Mapping[str, bool], timeout: float) -> None:
        """Wait up to ``timeout`` until the tree agrees with the API server about the quotas
        a check relies on (``expected``: name → whether the request needs it present). The
        informer lags a create or delete by a moment, which must neither refuse a request that
        follows it (a child created right after its parent, a quota recreated right after its
        delete) nor admit a duplicate name. A name expected present is looked up (``exists``)
        only when the tree lacks it; one expected absent (a create's own) always is.
        """
        if self.exists is None:
            return
        with self.lock:
            ask = [n for n, want in expected.items() if not want or n not in self.infos]
        truth: dict[str, bool] = {}
        for name in ask:
            found = self.exists(name)
            if found is not None:
                truth[name] = found
        deadline = time.monotonic() + timeout
        with self.lock:
            while any((n in self.infos) != found for n, found in truth.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.changed.wait(left)

    def get(self, name: str) -> QuotaInfo | None:
        with self.lock:
            return self.infos.get(name)

    def quota_for_namespace(self, namespace: str) -> str | None:
        with self.lock:
            return self.namespace_to_quota.get(namespace)

    # --- checks ----------------------------------------------------------------------------

    def _check_namespaces(self, q: QuotaInfo) -> None:
        for ns in q.namespaces:
            bound = self.namespace_to_quota.get(ns)
            if bound is not None and bound != q.name:
                raise QuotaError(f"namespace {ns} is already bound to quota {bound}, "
                                 f"quota: {q.name}")

    def _check_topology(self, q: QuotaInfo) -> None:
        if q.name == ROOT_QUOTA_NAME:
            return
        parent = self.infos.get(q.parent)
        if parent is not None and parent.tree_id != q.tree_id and q.parent != ROOT_QUOTA_NAME:
            raise QuotaError(f"{q.name} tree id [{q.tree_id}] is different from parent "
                             f"{parent.name} tree id [{parent.tree_id}]")
        for child in self.children.get(q.name, ()):
            info = self.infos.get(child)
            if info is not None and info.tree_id != q.tree_id:
                raise QuotaError(f"{q.name} tree id [{q.tree_id}] is different from child "
                                 f"{child} tree id [{info.tree_id}]")
        if q.parent == ROOT_QUOTA_NAME and not q.is_parent:
            return
        if q.parent != ROOT_QUOTA_NAME:
            if parent is None:
                raise QuotaError(f"{q.name} has parentName {q.parent} but the parent doesn't "
                                 f"exist")
            self._check_no_cycle(q)
            if not parent.is_parent:
                raise QuotaError(f"{q.name} has parentName {q.parent} but the parentQuotaInfo's "
                                 f"IsParent is false")
            self._check_keys(q, parent)
        self._check_min_sum(q, parent)

    def _check_no_cycle(self, q: QuotaInfo) -> None:
        seen = {q.name}
        name = q.parent
        while name and name != ROOT_QUOTA_NAME:
            if name in seen:
                raise QuotaError(f"{q.name} has parentName {q.parent} which forms a cycle in "
                                 f"the quota tree")
            seen.add(name)
            info = self.infos.get(name)
            if info is None:
                raise QuotaError(f"{q.name} has an ancestor {name} that doesn't exist")
            name = info.parent

    def _check_keys(self, q: QuotaInfo, parent: QuotaInfo) -> None:
        child_keys, parent_keys = set(q.max), set(parent.max)
        if self.gate.enabled(ELASTIC_QUOTA_ENABLE_UPDATE_RESOURCE_KEY):
            if not child_keys <= parent_keys:
                raise QuotaError(f"checkMaxQuotaKeySubsetOfParent failed: {q.name}'s max keys "
                                 f"{sorted(child_keys)} are not a subset of parent "
                                 f"{parent.name}'s {sorted(parent_keys)}")
        elif child_keys != parent_keys:
            raise QuotaError(f"checkMaxQuotaKeySame failed: {q.name}'s max keys "
                             f"{sorted(child_keys)} differ from parent {parent.name}'s "
                             f"{sorted(parent_keys)}")
        if not set(q.min) <= set(parent.min):
            raise QuotaError(f"checkMinQuotaKeySubsetOfParent failed: {q.name}'s min keys "
                             f"{sorted(q.min)} are not a subset of parent {parent.name}'s "
                             f"{sorted(parent.min)}")

    def _check_min_sum(self, q: QuotaInfo, parent: QuotaInfo | None) -> None:
        if q.allow_force_update or q.is_root:
            return
        if parent is not None and q.parent != ROOT_QUOTA_NAME:
            total = dict(q.min)
            for sibling in self.children.get(q.parent, ()):
                info = self.infos.get(sibling)
                if sibling == q.name or info is None:
                    continue
                for k, v in info.min.items():
                    total[k] = total.get(k, Decimal(0)) + v
            for k, v in total.items():
                if v > parent.min.get(k, Decimal(0)):
                    raise QuotaError(f"checkMinQuotaSum allChildren SumMinQuota > parentMinQuota, "
                                     f"parent: {parent.name}, resource {k}: sum {_fmt(v)} > "
                                     f"{_fmt(parent.min.get(k, Decimal(0)))}")
        children_sum: dict[str, Decimal] = {}
        for child in self.children.get(q.name, ()):
            info = self.infos.get(child)
            for k, v in (info.min if info else {}).items():
                children_sum[k] = children_sum.get(k, Decimal(0)) + v
        for k, v in children_sum.items():
            if v > q.min.get(k, Decimal(0)):
                raise QuotaError(f"checkMinQuotaSum allChildren SumMinQuota > parentMinQuota, "
                                 f"parent: {q.name}, resource {k}: sum {_fmt(v)} > "
                                 f"{_fmt(q.min.get(k, Decimal(0)))}")

    # --- the three operations --------------------------------------------------------------

    def valid_add(self, quota: Obj) -> None:
        q = QuotaInfo.from_quota(quota)
        with self.lock:
            if q.name in self.infos:
                raise QuotaError(f"AddQuota quota already exist:{q.name}")
            self._check_namespaces(q)
            validate_self(q)
            self._check_topology(q)

    def valid_update(self, old: Obj, new: Obj) -> None:
        if not _tree_fields_changed(old, new):
            return
        q = QuotaInfo.from_quota(new)
        if q.name in (SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME):
            raise QuotaError(f"invalid quota {q.name}")
        with self.lock:
            self._check_namespaces(q)
            current = self.infos.get(q.name)
            if current is None:
                raise QuotaError(f"UpdateQuota quota not exist in quotaInfoMap:{q.name}")
            validate_self(q)
            if current.is_parent and not q.is_parent and self.children.get(q.name):
                raise QuotaError(f"quota has children, isParent is forbidden to modify as "
                                 f"false, quotaName:{q.name}")
            if not current.is_parent and q.is_parent and self.pods_of(q):
                raise QuotaError(f"quota has bound pods, isParent is forbidden to modify as "
                                 f"true, quotaName: {q.name}")
            if current.tree_id != q.tree_id:
                raise QuotaError(f"{q.name} tree id changed [{current.tree_id}] vs "
                                 f"[{q.tree_id}]")
            self._check_topology(q)

    def valid_delete(self, quota: Obj) -> None:
        name = (quota.get("metadata") or {}).get("name", "")
        if name in (SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME) or name == "koordinator-default-quota":
            raise QuotaError(f"can not delete quotaGroup :{name}")
        with self.lock:
            info = self.infos.get(name)
            if info is None:
                raise QuotaError(f"not found quota:{name}")
            children = self.children.get(name) or set()
            if children:
                raise QuotaError(f"delete quota failed, quota {name} has {len(children)} "
                                 f"child quotas")
            pods = self.pods_of(info)
            if pods:
                raise QuotaError(f"delete quota failed, quota {name} has {len(pods)} child "
                                 f"pods: {', '.join(pods)}")


def _tree_fields_changed(old: Obj, new: Obj) -> bool:
    def view(q: Obj) -> tuple[Any, ...]:
        md = q.get("metadata") or {}
        labels, annotations = md.get("labels") or {}, md.get("annotations") or {}
        return (labels.get(LABEL_QUOTA_PARENT), labels.get(LABEL_QUOTA_IS_PARENT),
                labels.get(LABEL_QUOTA_TREE_ID), annotations.get(ANNOTATION_QUOTA_NAMESPACES),
                q.get("spec"))

    return view(old) != view(new)


__all__ = ["QuotaError", "QuotaInfo", "QuotaTopology", "validate_self"]
