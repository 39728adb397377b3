"""Node usage from NodeMetrics, thresholds, classification, target capacity, node fit and the
order pods leave an overloaded node in.

Corresponds to koordinator ``pkg/descheduler/framework/plugins/loadaware/utilization_util.go``
and ``sorter.go`` (pod and node usage scores, behind ``descheduler.utils.sorter``'s pod keys)
and LowNodeLoad's fit with thresholds over ``descheduler.utils.node``'s ``NodeFit``.
Quantities are integers: cpu in milli-units, everything else in units
(``pkg.util.podresources.quantity_int``); ``pods`` counts pods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from api.errors import MalformedValueError
from api.extension.amplification import parse_raw_allocatable
from api.extension.objects import namespaced_name as pod_key
from api.extension.priority import PriorityClass, get_pod_priority_class_with_default
from api.extension.qos import get_kube_qos_class, get_pod_qos_class_with_default
from api.meta import parse_timestamp
from descheduler.framework.types import Obj
from descheduler.utils.node import PODS, NodeFit, Resources
from descheduler.utils.sorter import PodOrderKey, creation_time, pod_order_key
from pkg.util.podresources import pod_requests, quantity_int, resource_list

log = logging.getLogger(__name__)




Thresholds = Mapping[str, float]


def raw_allocatable(node: Obj) -> Resources:
    """``node.koordinator.sh/raw-allocatable`` when present and parsable (amplified nodes), else
    ``status.allocatable``."""
    allocatable = (node.get("status") or {}).get("allocatable")
    try:
        raw = parse_raw_allocatable((node.get("metadata") or {}).get("annotations"))
        return resource_list(raw if raw is not None else allocatable)
    except (ValueError, MalformedValueError):
        return resource_list(allocatable)


@dataclass(slots=True)
class NodeUsage:
    """A node's measured usage (all pods, and prod pods only) and its pods' metrics."""

    node: Obj
    name: str
    allocatable: Resources
    all_pods: list[Obj]
    prod_pods: list[Obj]
    usage: Resources
    prod_usage: Resources
    pod_metrics: dict[str, Resources] = field(default_factory=dict)


@dataclass(slots=True)
class NodeThresholds:
    low: Resources
    high: Resources
    prod_low: Resources
    prod_high: Resources


@dataclass(slots=True)
class NodeInfo:
    usage: NodeUsage
    thresholds: NodeThresholds

    @property
    def name(self) -> str:
        return self.usage.name


def node_usages(nodes: Iterable[Obj], resource_names: Sequence[str],
                node_metric: Callable[[str], Obj | None],
                pods_on_node: Callable[[str], list[Obj]], expiration_seconds: int | None,
                now: float) -> dict[str, NodeUsage]:
    """Usage of every node with a fresh NodeMetric: system usage plus every reported pod's
    usage, and the reported usage of the node's prod pods; nodes without one are left out."""
    out: dict[str, NodeUsage] = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name") or ""
        pods = [p for p in pods_on_node(name)
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        prod_pods = [p for p in pods
                     if get_pod_priority_class_with_default(p) is PriorityClass.PROD]
        prod_keys = {pod_key(p) for p in prod_pods}
        metric = node_metric(name)
        status = (metric or {}).get("status") or {}
        if metric is None:
            log.error("Failed to get NodeMetric, node %s", name)
            continue
        if status.get("nodeMetric") is None or expiration_seconds is not None and \
                _expired(status.get("updateTime"), expiration_seconds, now):
            log.error("NodeMetric has expired, node %s, effective period %ds", name,
                      expiration_seconds or 0)
            continue
        system = ((status["nodeMetric"].get("systemUsage") or {}).get("resources")) or {}
        metrics: dict[str, Resources] = {}
        try:
            for info in status.get("podsMetric") or []:
                pod_usage = (info.get("podUsage") or {}).get("resources") or {}
                metrics[f"{info.get('namespace', '')}/{info.get('name', '')}"] = {
                    r: quantity_int(r, q) for r, q in pod_usage.items()}
            usage = {r: quantity_int(r, system[r]) if r in system else 0
                     for r in resource_names}
        except ValueError as err:  # a quantity the API server would not have stored
            log.error("NodeMetric %s is malformed, node left out: %s", name, err)
            continue
        prod_usage = dict.fromkeys(resource_names, 0)
        for key, pod_usage in metrics.items():
            for r in resource_names:
                usage[r] += pod_usage.get(r, 0)
                if key in prod_keys:
                    prod_usage[r] += pod_usage.get(r, 0)
        usage[PODS], prod_usage[PODS] = len(pods), len(prod_pods)
        out[name] = NodeUsage(node, name, raw_allocatable(node), pods, prod_pods, usage,
                              prod_usage, metrics)
    return out


def _expired(update_time: object, expiration_seconds: int, now: float) -> bool:
    updated = parse_timestamp(update_time)
    return updated is None or expiration_seconds > 0 and now - updated >= expiration_seconds


def threshold_quantity(allocatable: Resources, resource: str, percent: float) -> int:
    """``int64(float64(p) * 0.01 * float64(alloc))``, alloc in milli for cpu."""
    return int(percent * 0.01 * float(allocatable.get(resource, 0)))


def _clamp(percent: float) -> float:
    return min(max(percent, 0.0), 100.0)


def average_usage_percent(usages: Iterable[NodeUsage], prod: bool) -> dict[str, float]:
    """Mean over the nodes of each resource's used/allocatable × 100."""
    nodes = list(usages)
    totals: dict[str, float] = {}
    for nu in nodes:
        for r, used in (nu.prod_usage if prod else nu.usage).items():
            total = nu.allocatable.get(r, 0)
            if total:
                totals[r] = totals.get(r, 0.0) + used / total * 100.0
    return {r: t / len(nodes) for r, t in totals.items()}


def node_thresholds(usages: Mapping[str, NodeUsage], low: Thresholds, high: Thresholds,
                    prod_low: Thresholds, prod_high: Thresholds, resource_names: Sequence[str],
                    deviation: bool) -> dict[str, NodeThresholds]:
    """Each node's four threshold maps in quantities: absolute percents of its allocatable,
    or (deviation mode) the pool's average usage minus/plus the percents."""
    avg = average_usage_percent(usages.values(), False) if deviation else {}
    prod_avg = average_usage_percent(usages.values(), True) if deviation else {}
    out = {}
    for name, nu in usages.items():
        alloc = nu.allocatable
        t = NodeThresholds({}, {}, {}, {})
        for r in resource_names:
            if not deviation:
                t.low[r] = threshold_quantity(alloc, r, low.get(r, 0.0))
                t.high[r] = threshold_quantity(alloc, r, high.get(r, 0.0))
                t.prod_low[r] = threshold_quantity(alloc, r, prod_low.get(r, 0.0))
                t.prod_high[r] = threshold_quantity(alloc, r, prod_high.get(r, 0.0))
                continue
            for lo, hi, into_lo, into_hi, average in (
                    (low, high, t.low, t.high, avg),
                    (prod_low, prod_high, t.prod_low, t.prod_high, prod_avg)):
                if lo.get(r, 0.0) == 0:
                    into_lo[r] = into_hi[r] = alloc.get(r, 0)
                else:
                    into_lo[r] = threshold_quantity(
                        alloc, r, _clamp(average.get(r, 0.0) - lo[r]))
                    into_hi[r] = threshold_quantity(
                        alloc, r, _clamp(average.get(r, 0.0) + hi.get(r, 0.0)))
        out[name] = t
    return out


def overutilized(usage: Mapping[str, int], thresholds: Mapping[str, int]) -> dict[str, int]:
    """The resources whose usage is above their threshold (empty: not overutilized)."""
    return {r: usage[r] for r, t in thresholds.items() if r in usage and usage[r] > t}


def underutilized(usage: Mapping[str, int], thresholds: Mapping[str, int]) -> bool:
    """Every resource with a usage is at or below its threshold."""
    return all(usage[r] <= t for r, t in thresholds.items() if r in usage)


@dataclass(slots=True)
class Classes:
    low: list[NodeInfo] = field(default_factory=list)
    high: list[NodeInfo] = field(default_factory=list)
    prod_low: list[NodeInfo] = field(default_factory=list)
    prod_high: list[NodeInfo] = field(default_factory=list)
    both_low: list[NodeInfo] = field(default_factory=list)


def classify(usages: Mapping[str, NodeUsage],
             thresholds: Mapping[str, NodeThresholds]) -> Classes:
    """Low nodes must be schedulable; a node neither low nor high may still be prod high or
    prod low; the rest are appropriately used and left alone."""
    out = Classes()
    for name, nu in usages.items():
        t = thresholds[name]
        info = NodeInfo(nu, t)
        schedulable = not (nu.node.get("spec") or {}).get("unschedulable")
        if schedulable and underutilized(nu.usage, t.low):
            if overutilized(nu.prod_usage, t.prod_high):
                out.prod_high.append(info)
            elif underutilized(nu.prod_usage, t.prod_low):
                out.both_low.append(info)
            else:
                out.low.append(info)
        elif overutilized(nu.usage, t.high):
            out.high.append(info)
        elif overutilized(nu.prod_usage, t.prod_high):
            out.prod_high.append(info)
        elif schedulable and underutilized(nu.prod_usage, t.prod_low):
            out.prod_low.append(info)
    return out


def available(nodes: Iterable[NodeInfo], resource_names: Sequence[str], prod: bool) -> Resources:
    """Σ (high − usage) over ``nodes`` per resource (prodHigh/prodUsage when ``prod``)."""
    out = dict.fromkeys(resource_names, 0)
    for info in nodes:
        t = info.thresholds.prod_high if prod else info.thresholds.high
        usage = info.usage.prod_usage if prod else info.usage.usage
        for r in resource_names:
            out[r] += t.get(r, 0) - usage.get(r, 0)
    return out


def usage_score(usage: Mapping[str, int], allocatable: Mapping[str, int],
                weights: Mapping[str, int]) -> int:
    """Σ_r w_r·⌊min(used, alloc)·1000/alloc⌋ / Σ_r w_r over the usage's resources."""
    total = weight_sum = 0
    for r, used in usage.items():
        w = weights.get(r, 0)
        alloc = allocatable.get(r, 0)
        score = min(used, alloc) * 1000 // alloc if alloc > 0 else 0
        total += w * score
        weight_sum += w
    return total // weight_sum if weight_sum else 0


def sort_nodes_by_usage(nodes: list[NodeInfo], weights: Mapping[str, int], prod: bool,
                        ascending: bool = False) -> None:
    """Orders ``nodes`` in place by usage score (prod usage when ``prod``)."""
    nodes.sort(key=lambda n: usage_score(n.usage.prod_usage if prod else n.usage.usage,
                                         n.usage.allocatable, weights), reverse=not ascending)


# --- node fit --------------------------------------------------------------------------------

def _full(target: NodeInfo, floor: Mapping[str, int], prod: bool) -> bool:
    """Whether no candidate can fit ``target`` any more: even the smallest usage (``floor``)
    takes it over a high (prodHigh) threshold."""
    usage = target.usage.prod_usage if prod else target.usage.usage
    thresholds = target.thresholds.prod_high if prod else target.thresholds.high
    return any(r in usage and usage[r] + floor.get(r, 0) > t for r, t in thresholds.items())


class Targets:
    """The targets of one balancing pass, in order, dropping those no candidate can fit any
    more (a target's reserved usage only grows within the pass), so placing many candidates
    does not rescan full targets; which target a candidate fits is unchanged."""

    def __init__(self, targets: Sequence[NodeInfo], floor: Mapping[str, int], fit: NodeFit,
                 prod: bool) -> None:
        self.floor = floor
        self.fit = fit
        self.prod = prod
        self.nodes = [t for t in targets if not _full(t, floor, prod)]

    def fits_any_with_threshold(self, pod: Obj, metric: Mapping[str, int]) -> bool:
        """Whether ``pod`` fits some target without taking it over its high (prodHigh)
        thresholds; the pod's usage stays added to the target it fits, reserving that room."""
        requests = pod_requests(pod)
        prod = self.prod
        for i, target in enumerate(self.nodes):
            errors = self.fit.errors(pod, target.usage.node, requests)
            if errors:
                log.debug("Pod %s does not fit on node %s: %s", pod_key(pod), target.name,
                          errors)
                continue
            usage = target.usage.prod_usage if prod else target.usage.usage
            thresholds = target.thresholds.prod_high if prod else target.thresholds.high
            added = []
            exceeded = False
            for r, t in thresholds.items():
                if r in usage:
                    usage[r] += metric.get(r, 0)
                    added.append(r)
                    if usage[r] > t:
                        exceeded = True
                        break
            if exceeded:
                for r in added:
                    usage[r] -= metric.get(r, 0)
                log.debug("Pod %s may cause node %s over-utilized", pod_key(pod), target.name)
                continue
            if _full(target, self.floor, prod):
                del self.nodes[i]
            return True
        return False


# --- pod order -------------------------------------------------------------------------------

def pod_usage_score(metric: Mapping[str, int], excess: Mapping[str, int],
                    weights: Mapping[str, int]) -> float:
    """How well the pod's usage matches the node's excess over its thresholds: per overused
    resource ratio = usage/excess, scored ratio below 1 and 1/ratio + 1 from 1 on."""
    total = 0.0
    weight_sum = 0
    for r, used in metric.items():
        w = weights.get(r, 0) if r in excess else 0
        if w == 0:
            continue
        ratio = used / excess[r]  # excess > 0: the resource is over its threshold
        total += w * (ratio if ratio < 1 else 1 / ratio + 1)
        weight_sum += w
    return total / weight_sum if weight_sum else 0.0


def _excess(source: NodeInfo, prod: bool) -> dict[str, int]:
    usage = source.usage.prod_usage if prod else source.usage.usage
    thresholds = source.thresholds.prod_high if prod else source.thresholds.high
    return {r: used - thresholds[r] for r, used in overutilized(usage, thresholds).items()}


def victim_explanation(pod: Obj, source: NodeInfo, weights: Mapping[str, int], prod: bool,
                       rank: int, candidates: int) -> str:
    """Why ``pod`` comes where it does in ``sort_pods``' order (koordinator#1975): its place,
    the order key's parts, and how its usage matches the node's excess."""
    metric = source.usage.pod_metrics.get(pod_key(pod))
    excess = _excess(source, prod)
    match = (f"usage {dict(metric)} matches excess {excess} with score "
             f"{pod_usage_score(metric, excess, weights):.3f}" if metric is not None
             else "no metric")
    return (f"victim {rank}/{candidates}: priorityClass "
            f"{get_pod_priority_class_with_default(pod).value}, priority "
            f"{(pod.get('spec') or {}).get('priority') or 0}, QoS "
            f"{get_kube_qos_class(pod)}/{get_pod_qos_class_with_default(pod).value}, "
            f"{match}")


def sort_pods(pods: list[Obj], source: NodeInfo, weights: Mapping[str, int], prod: bool) -> None:
    """Orders ``pods`` in place, first to be evicted first: lower koord priority class,
    priority, Kubernetes QoS, koord QoS, deletion cost and eviction cost; then the pod whose
    usage best matches the node's excess (pods without a metric last); then newer pods."""
    excess = _excess(source, prod)
    metrics = source.usage.pod_metrics

    def key(pod: Obj) -> tuple[PodOrderKey, int, float, float]:
        metric = metrics.get(pod_key(pod))
        return (pod_order_key(pod), 0 if metric is not None else 1,
                -pod_usage_score(metric, excess, weights) if metric is not None else 0.0,
                -creation_time(pod))

    pods.sort(key=key)
