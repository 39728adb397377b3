"""One quota of the scheduler's quota tree, with its demand, use and runtime.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/core/quota_info.go``
(``QuotaInfo``, ``QuotaCalculateInfo``, ``PodInfo``, ``NewQuotaInfoFromQuota``). Built from an
ElasticQuota (parsed JSON or the ``api.thirdparty`` model) with the labels and annotations of
``api.extension.elastic_quota``. Quantities are integers: cpu in milli, everything else in units.
The ``self_*`` lists are what pods charged directly to this quota contribute; the others include
the children's contributions (for a leaf both are the same).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from typing import Any

from api.core import QuantityFormat, format_quantity
from api.extension.elastic_quota import (
    ANNOTATION_SHARED_WEIGHT,
    get_parent_quota_name,
    get_quota_namespaces,
    get_shared_weight,
    is_allow_lent_resource,
    is_parent_quota,
)
from api.extension.objects import KubeDict, annotations_of, labels_of, metadata_of, spec_of
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from pkg.util.podresources import CPU, MEMORY, resource_list
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import ResourceInts


def add_non_negative(into: ResourceInts, delta: Mapping[str, int]) -> None:
    """``into += delta``, a name that would go negative stays at 0 (``add*NonNegativeNoLock``)."""
    for name, v in delta.items():
        into[name] = max(into.get(name, 0) + v, 0)


def subtract(a: Mapping[str, int], b: Mapping[str, int]) -> ResourceInts:
    """``quotav1.Subtract``: every name of either side."""
    out = dict(a)
    for name, v in b.items():
        out[name] = out.get(name, 0) - v
    return out


def mask(rl: Mapping[str, int], names: Mapping[str, int]) -> ResourceInts:
    """``quotav1.Mask``: only the names of ``names``."""
    return {name: v for name, v in rl.items() if name in names}


def is_zero(rl: Mapping[str, int]) -> bool:
    return not any(rl.values())


def to_resource_list(rl: Mapping[str, int]) -> dict[str, str]:
    """Integers back to quantities as upstream's ``createQuantity`` writes them: cpu as milli
    (DecimalSI), memory as bytes (BinarySI), everything else DecimalSI."""
    out = {}
    for name, v in rl.items():
        if name == CPU:
            out[name] = format_quantity(Decimal(v) / 1000)
        else:
            out[name] = format_quantity(
                v, QuantityFormat.BINARY_SI if name == MEMORY else QuantityFormat.DECIMAL_SI)
    return out


@dataclass(slots=True)
class PodEntry:
    """What a pod counts for in its quota (upstream ``PodInfo``)."""

    request: ResourceInts
    non_preemptible: bool
    assigned: bool = False


@dataclass(slots=True)
class QuotaInfo:
    name: str
    parent: str
    is_parent: bool = False
    allow_lent: bool = True
    namespace: str = ""
    # Namespaces bound by the ``namespaces`` annotation.
    namespaces: tuple[str, ...] = ()
    min: ResourceInts = field(default_factory=dict)
    max: ResourceInts = field(default_factory=dict)
    shared_weight: ResourceInts = field(default_factory=dict)
    # min after §8.4 scaling; what the runtime calculator guarantees.
    auto_scale_min: ResourceInts = field(default_factory=dict)
    # max(min, allocated) under ElasticQuotaGuaranteeUsage, else empty.
    guaranteed: ResourceInts = field(default_factory=dict)
    allocated: ResourceInts = field(default_factory=dict)
    # Leaf: Σ pod requests; parent: Σ children's limited requests (+ its own pods).
    child_request: ResourceInts = field(default_factory=dict)
    # The demand to the parent: child_request, raised to min when the quota does not lend.
    request: ResourceInts = field(default_factory=dict)
    used: ResourceInts = field(default_factory=dict)
    non_preemptible_request: ResourceInts = field(default_factory=dict)
    non_preemptible_used: ResourceInts = field(default_factory=dict)
    self_request: ResourceInts = field(default_factory=dict)
    self_used: ResourceInts = field(default_factory=dict)
    self_non_preemptible_request: ResourceInts = field(default_factory=dict)
    self_non_preemptible_used: ResourceInts = field(default_factory=dict)
    runtime: ResourceInts = field(default_factory=dict)
    # The parent calculator's version the runtime was read at (0: never).
    runtime_version: int = 0
    pods: dict[str, PodEntry] = field(default_factory=dict)

    @classmethod
    def from_quota(cls, quota: ElasticQuota | KubeDict, *,
                   guarantee_usage: bool = False) -> QuotaInfo:
        """A quota's configuration (no demand, use or runtime yet).

        Raises ValueError naming the quota for a quantity that does not parse.
        """
        obj: Mapping[str, Any] = quota.to_dict() if isinstance(quota, ElasticQuota) else quota
        md, labels, annotations = metadata_of(obj), labels_of(obj), annotations_of(obj)
        name = md.get("name") or ""
        spec = spec_of(obj)
        where = f"elastic quota {md.get('namespace', '')}/{name}"

        def parse(field: str, value: Any) -> ResourceInts:
            try:
                return resource_list(value)
            except (ValueError, ArithmeticError) as exc:
                raise ValueError(f"{where}: {field}: {exc}") from exc

        max_ = parse("spec.max", spec.get("max"))
        weight = parse(f"annotation {ANNOTATION_SHARED_WEIGHT}",
                       get_shared_weight(annotations, spec.get("max") or {}))
        min_ = parse("spec.min", spec.get("min"))
        return cls(
            name=name,
            parent=get_parent_quota_name(name, labels),
            is_parent=is_parent_quota(labels),
            # ElasticQuotaGuaranteeUsage: a quota keeps what it was guaranteed, it never lends.
            allow_lent=is_allow_lent_resource(labels) and not guarantee_usage,
            namespace=md.get("namespace") or "",
            namespaces=tuple(get_quota_namespaces(annotations)),
            min=min_, max=max_, shared_weight=weight, auto_scale_min=dict(min_),
        )

    def limited_request(self) -> ResourceInts:
        """min(request, max) per resource: a child never asks its parent for more than its max."""
        return {name: min(v, self.max[name]) if name in self.max else v
                for name, v in self.request.items()}

    def real_request(self) -> ResourceInts:
        """``child_request``, raised to ``min`` when the quota does not lend."""
        request = dict(self.child_request)
        if not self.allow_lent:
            for name, q in self.min.items():
                request[name] = max(q, request.get(name, 0))
        return request

    def masked_runtime(self) -> ResourceInts:
        """The runtime in the names of ``max`` (what plugins check against)."""
        return {name: v for name, v in self.runtime.items() if name in self.max}

    def config_equals(self, other: QuotaInfo) -> bool:
        """Same tree position and limits (upstream ``isQuotaChange`` negated)."""
        return (self.parent, self.is_parent, self.allow_lent, self.min, self.max,
                self.shared_weight, self.namespaces) == \
            (other.parent, other.is_parent, other.allow_lent, other.min, other.max,
             other.shared_weight, other.namespaces)

    def assigned_pods(self) -> list[str]:
        return [key for key, pod in self.pods.items() if pod.assigned]

    def copy(self, *, with_pods: bool = True) -> QuotaInfo:
        """An independent copy: every resource list and pod entry copied (no pods at all
        without ``with_pods``: the scheduling cycle's copy, cheap whatever the quota holds)."""
        # Field by field from precomputed names: the scheduling cycle copies its quota once per
        # pod, and ``dataclasses.replace`` plus a ``fields()`` walk cost several times more.
        copied = object.__new__(QuotaInfo)
        for name in _SCALAR_FIELDS:
            setattr(copied, name, getattr(self, name))
        for name in _RESOURCE_FIELDS:
            setattr(copied, name, dict(getattr(self, name)))
        copied.pods = {k: replace(p, request=dict(p.request)) for k, p in self.pods.items()} \
            if with_pods else {}
        return copied


_RESOURCE_FIELDS = tuple(f.name for f in fields(QuotaInfo) if f.type == "ResourceInts")
_SCALAR_FIELDS = tuple(f.name for f in fields(QuotaInfo)
                       if f.name not in _RESOURCE_FIELDS and f.name != "pods")


__all__ = [
    "PodEntry", "QuotaInfo", "add_non_negative", "is_zero", "mask", "subtract", "to_resource_list",
]
