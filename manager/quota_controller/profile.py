"""The quota profile controller: one root ElasticQuota per ElasticQuotaProfile.

Corresponds to upstream ``pkg/quota-controller/profile`` (controller name ``quotaprofile``,
events from ``quotaprofile-controller``). For each ElasticQuotaProfile it

1. gives the profile a quota tree ID (label ``quota.scheduling.koordinator.sh/tree-id``, the
   decimal FNV-64a hash of ``"<namespace>/<name>"``) when it has none;
2. sums the allocatable of the nodes its ``nodeSelector`` matches (``total``), and of those of
   them that are unschedulable or not Ready (``unschedulable``), both scaled by
   ``resourceRatio`` when the profile has one;
3. writes the ElasticQuota ``<namespace>/<quotaName>``: ``spec.min`` = ``total`` for each
   resource key (annotation ``resource-keys``, default cpu and memory), ``spec.max`` =
   ``MaxInt64 / 2000`` for each; labels ``profile``, ``quotaLabels``, ``tree-id`` and
   ``is-root: "true"``; annotations ``total-resource`` and ``unschedulable-resource``.

It creates the quota, or updates it only when labels, annotations or spec differ. A failed
write is an Event on the profile (``CreateQuotaFailed`` / ``UpdateQuotaFailed``) and a retry in
2 s; otherwise the profile is reconciled again every 10 s, which is how node changes reach the
quota (upstream watches only the profiles, and only their spec: ``GenerationChangedPredicate``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from api.core import QuantityFormat, format_quantity, quantity_format, quantity_value
from api.errors import MalformedValueError
from api.extension.elastic_quota import (
    ANNOTATION_RESOURCE_KEYS,
    ANNOTATION_TOTAL_RESOURCE,
    ANNOTATION_UNSCHEDULABLE_RESOURCE,
    DEFAULT_RESOURCE_KEYS,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_PROFILE,
    LABEL_QUOTA_TREE_ID,
    parse_resource_keys,
)
from api.quota.v1alpha1 import ElasticQuotaProfile
from api.thirdparty.schedulerplugins.v1alpha1 import ElasticQuota
from pkg.client.informers import SharedInformerFactory, deleted_object
from pkg.client.resources import ELASTIC_QUOTA_PROFILES, ELASTIC_QUOTAS, NODES
from pkg.client.rest import Client
from pkg.controller import Controller, Result
from pkg.events.recorder import WARNING, EventRecorder
from pkg.util.clock import REAL_CLOCK, Clock
from pkg.util.labels import InvalidSelectorError, parse_selector
from pkg.util.predicates import generation_changed

log = logging.getLogger(__name__)

NAME = "quotaprofile"
EVENT_SOURCE = "quotaprofile-controller"
REASON_CREATE_QUOTA_FAILED = "CreateQuotaFailed"
REASON_UPDATE_QUOTA_FAILED = "UpdateQuotaFailed"

# spec.max of every managed resource: effectively unlimited, yet small enough that a
# scheduler summing the maxima of many quotas in int64 milli-units does not overflow.
QUOTA_MAX = (2**63 - 1) // 2000
RESYNC_AFTER = 10.0
RETRY_AFTER_FAILED_WRITE = 2.0


def tree_id(namespace: str, name: str) -> str:
    """The quota tree ID of a profile: FNV-64a of ``"<namespace>/<name>"``, in decimal."""
    h = 0xCBF29CE484222325
    for byte in f"{namespace}/{name}".encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return str(h)


@dataclass(slots=True)
class _Sum:
    """A running sum of one resource; it prints in the format of its first addend, as a Go
    Quantity sum keeps its receiver's format."""

    value: Decimal
    fmt: QuantityFormat


ResourceSums = dict[str, _Sum]


def _add(into: ResourceSums, allocatable: Mapping[str, Any]) -> None:
    for name, q in allocatable.items():
        text = str(q)
        s = into.get(name)
        if s is None:
            into[name] = _Sum(quantity_value(text), quantity_format(text))
        else:
            s.value += quantity_value(text)


def _milli(value: Decimal) -> int:
    return int((value * 1000).to_integral_value(rounding="ROUND_CEILING"))


def _units(value: Decimal) -> int:
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


def _scale(sums: ResourceSums, ratio: float) -> None:
    """Multiply every sum by ``ratio`` as upstream's ``MultiplyQuantity`` does: in float64,
    truncated to whole millicores for cpu and whole units otherwise; cpu and the rest come out
    DecimalSI, memory BinarySI."""
    for name, s in sums.items():
        if name == "cpu":
            s.value = Decimal(int(float(_milli(s.value)) * ratio)) / 1000
            s.fmt = QuantityFormat.DECIMAL_SI
        else:
            s.value = Decimal(int(float(_units(s.value)) * ratio))
            s.fmt = QuantityFormat.BINARY_SI if name == "memory" else QuantityFormat.DECIMAL_SI


def _format(s: _Sum) -> str:
    return format_quantity(s.value, s.fmt)


def resource_list_json(sums: ResourceSums) -> str:
    """A ResourceList as Go's ``json.Marshal`` writes it: names sorted, canonical quantities."""
    return json.dumps({n: _format(sums[n]) for n in sorted(sums)}, separators=(",", ":"))


def _is_ready(node: Mapping[str, Any]) -> bool:
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def pool_resources(nodes: Iterable[Mapping[str, Any]]) -> tuple[ResourceSums, ResourceSums]:
    """(total, unschedulable) allocatable of ``nodes``."""
    total: ResourceSums = {}
    unschedulable: ResourceSums = {}
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        _add(total, allocatable)
        if (node.get("spec") or {}).get("unschedulable") or not _is_ready(node):
            _add(unschedulable, allocatable)
    return total, unschedulable


def _resource_keys(profile: ElasticQuotaProfile) -> list[str]:
    try:
        return parse_resource_keys(profile.metadata.annotations)
    except MalformedValueError as err:
        log.warning("ElasticQuotaProfile %s/%s: ignoring annotation %s (using %s): %s",
                    profile.metadata.namespace, profile.metadata.name, ANNOTATION_RESOURCE_KEYS,
                    list(DEFAULT_RESOURCE_KEYS), err)
        return list(DEFAULT_RESOURCE_KEYS)


def _canonical_resources(rl: Mapping[str, Any] | None) -> dict[str, str]:
    return {n: format_quantity(str(q)) for n, q in (rl or {}).items()}


def desired_quota(profile: ElasticQuotaProfile, existing: dict[str, Any] | None,
                  nodes: Iterable[Mapping[str, Any]], quota_tree_id: str) -> dict[str, Any]:
    """The ElasticQuota ``profile`` asks for, on top of ``existing`` (its other labels,
    annotations and status are kept)."""
    total, unschedulable = pool_resources(nodes)
    if profile.spec.resource_ratio is not None:
        # An unparsable or out-of-range ratio counts as 1, but the scaling still runs (and
        # rounds), as upstream.
        ratio = float(profile.spec.resource_ratio_effective)
        _scale(total, ratio)
        _scale(unschedulable, ratio)
    spec_min: dict[str, str] = {}
    spec_max: dict[str, str] = {}
    for key in _resource_keys(profile):
        spec_min[key] = _format(total[key]) if key in total else "0"
        spec_max[key] = str(QUOTA_MAX)
    md = profile.metadata
    quota: dict[str, Any] = dict(existing) if existing else {
        "apiVersion": ElasticQuota.api_version_string(), "kind": "ElasticQuota",
        "metadata": {"namespace": md.namespace, "name": profile.spec.quota_name}}
    meta = dict(quota.get("metadata") or {})
    labels = dict(meta.get("labels") or {})
    labels[LABEL_QUOTA_PROFILE] = md.name or ""
    labels.update(profile.spec.quota_labels or {})
    labels[LABEL_QUOTA_TREE_ID] = quota_tree_id
    labels[LABEL_QUOTA_IS_ROOT] = "true"
    annotations = dict(meta.get("annotations") or {})
    annotations[ANNOTATION_TOTAL_RESOURCE] = resource_list_json(total)
    annotations[ANNOTATION_UNSCHEDULABLE_RESOURCE] = resource_list_json(unschedulable)
    meta["labels"] = labels
    meta["annotations"] = annotations
    quota["metadata"] = meta
    quota["spec"] = {"min": spec_min, "max": spec_max}
    return quota


def quota_differs(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether labels, annotations or spec (quantities compared by value) changed."""
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    if (om.get("labels") or {}) != (nm.get("labels") or {}):
        return True
    if (om.get("annotations") or {}) != (nm.get("annotations") or {}):
        return True
    os_, ns = old.get("spec") or {}, new.get("spec") or {}
    return any(_canonical_resources(os_.get(f)) != _canonical_resources(ns.get(f))
               for f in ("min", "max"))


class _SpecChangeHandler:
    """Enqueues a profile when it is created, deleted, or its spec changes (its generation),
    as controller-runtime's ``GenerationChangedPredicate``."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.controller.enqueue_object(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if generation_changed(old, new):
            self.controller.enqueue_object(new)

    def on_delete(self, obj: Any) -> None:
        self.controller.enqueue_object(deleted_object(obj))


class QuotaProfileController:
    """Keeps each ElasticQuotaProfile's root ElasticQuota current (see the module docstring).

    Reads profiles, quotas and nodes from ``factory``'s informers; writes with ``client``.
    """

    def __init__(self, client: Client, factory: SharedInformerFactory, recorder: EventRecorder,
                 *, workers: int = 1, clock: Clock = REAL_CLOCK) -> None:
        self.client = client
        self.recorder = recorder
        self.profiles = factory.informer_for(ELASTIC_QUOTA_PROFILES)
        self.quotas = factory.informer_for(ELASTIC_QUOTAS, typed=False)
        self.nodes = factory.informer_for(NODES)
        self.controller = Controller(NAME, self.reconcile, workers=workers, clock=clock)
        self.profiles.add_event_handler(_SpecChangeHandler(self.controller))

    def start(self, sync_timeout: float | None = None) -> bool:
        """Start the workers once the informers have synced (the factory starts them)."""
        return self.controller.start(wait_for=[self.profiles, self.quotas, self.nodes],
                                     sync_timeout=sync_timeout)

    def stop(self, timeout: float | None = 30.0) -> bool:
        return self.controller.stop(timeout)

    def reconcile(self, key: str) -> Result | None:
        namespace, _, name = key.partition("/")
        profile: ElasticQuotaProfile | None = self.profiles.lister.get(name, namespace)
        if profile is None:
            return None  # deleted: its quota stays, as upstream
        quota_tree_id = (profile.metadata.labels or {}).get(LABEL_QUOTA_TREE_ID, "")
        if not quota_tree_id:
            quota_tree_id = tree_id(namespace, name)
            updated = profile.model_copy(deep=True)
            updated.metadata.labels = {**(updated.metadata.labels or {}),
                                       LABEL_QUOTA_TREE_ID: quota_tree_id}
            self.client.update(ELASTIC_QUOTA_PROFILES, updated, namespace)
        try:
            selector = parse_selector(profile.spec.node_selector)
        except InvalidSelectorError as err:
            log.error("ElasticQuotaProfile %s: invalid spec.nodeSelector: %s", key, err)
            return Result(requeue=True)
        nodes = self.nodes.lister.list(selector)
        existing = self.quotas.lister.get(profile.spec.quota_name, namespace)
        quota = desired_quota(profile, existing, nodes, quota_tree_id)
        if existing is None:
            try:
                self.client.create(ELASTIC_QUOTAS, quota, namespace)
            except Exception as err:  # noqa: BLE001 - any failure is reported and retried
                return self._failed(profile, REASON_CREATE_QUOTA_FAILED, "create", err)
            log.info("ElasticQuotaProfile %s: created ElasticQuota %s/%s", key, namespace,
                     profile.spec.quota_name)
        elif quota_differs(existing, quota):
            try:
                self.client.update(ELASTIC_QUOTAS, quota, namespace)
            except Exception as err:  # noqa: BLE001
                return self._failed(profile, REASON_UPDATE_QUOTA_FAILED, "update", err)
            log.info("ElasticQuotaProfile %s: updated ElasticQuota %s/%s", key, namespace,
                     profile.spec.quota_name)
        return Result(requeue_after=RESYNC_AFTER)

    def _failed(self, profile: ElasticQuotaProfile, reason: str, verb: str,
                err: BaseException) -> Result:
        self.recorder.eventf(profile, WARNING, reason, "failed to %s quota, err: %s", verb, err)
        log.error("failed %s quota for profile %s/%s, error: %s", verb,
                  profile.metadata.namespace, profile.metadata.name, err)
        return Result(requeue_after=RETRY_AFTER_FAILED_WRITE)


__all__ = [
    "EVENT_SOURCE", "NAME", "QUOTA_MAX",
    "REASON_CREATE_QUOTA_FAILED", "REASON_UPDATE_QUOTA_FAILED", "QuotaProfileController",
    "desired_quota", "pool_resources", "quota_differs", "resource_list_json", "tree_id",
]
