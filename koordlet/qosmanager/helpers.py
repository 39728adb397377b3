"""Metric and pod helpers of the strategies: upstream `qosmanager/helpers` (`CollectNodeMetrics`,
`CollectPodMetricLast`, the BE-pod sort of the evictors).

`evictable_by_priority` and `priority_order` are the candidate filter and victim order shared
by the evictors that pick by priority (upstream MemoryEvict, CPUEvict and the allocatable ones).
`class_request`, `allocatable_release` and `released_classes` are the request arithmetic of the
allocatable ones (upstream `plugins/util` `GetRequestTypeAndValueFromPod` and the
`calculate*ReleaseByAllocatableThresholdPercent` of cpuevict and memoryevict).

"Last" values come from the window `2 × --collect-res-used-interval` before now, as upstream;
a strategy that finds no point skips its round.

``AnnotationWarnings`` reports a malformed annotation a strategy skips (no upstream
counterpart: upstream returns an error each round): one log line and one Warning event per
distinct value, not one per round.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from api.errors import MalformedValueError
from api.extension.codec import parse_int_value
from api.extension.eviction import (
    is_eviction_allowed,
    parse_eviction_priority,
    pod_evict_enabled,
)
from api.extension.priority import (
    LABEL_POD_PRIORITY,
    PRIORITY_MID_VALUE_MAX,
    PriorityClass,
    get_pod_priority_class_with_default,
    get_pod_priority_value_with_default,
)
from api.extension.qos import QoSClass, get_pod_qos_class_raw
from api.extension.resource import RESOURCE_NAME_MAP
from koordlet.qosmanager.framework import Context, KubeDict
from pkg.events.recorder import WARNING
from pkg.util.podresources import pod_requests, resource_list

logger = logging.getLogger(__name__)

# The Warning event on a Node or Pod whose annotation a strategy ignores.
REASON_MALFORMED_ANNOTATION = "MalformedAnnotation"


@dataclass(slots=True)
class Window:
    """An aggregate over a window and how many points it had."""

    value: float
    count: int


def last_value(ctx: Context, kind: str, props: dict[str, str] | None = None) -> float | None:
    now = ctx.clock.now()
    result = ctx.metric_cache.query(
        kind, props or {}, now - 2 * ctx.collect_res_used_interval_seconds, now
    )
    return result.value("last") if result.count() else None


def avg_over(ctx: Context, kind: str, props: dict[str, str], window_seconds: float) -> Window:
    now = ctx.clock.now()
    result = ctx.metric_cache.query(kind, props, now - window_seconds, now)
    return Window(result.value("avg") if result.count() else 0.0, result.count())


def pod_uid(pod: KubeDict) -> str:
    return (pod.get("metadata") or {}).get("uid", "")


def pod_name(pod: KubeDict) -> str:
    return (pod.get("metadata") or {}).get("name", "")


def spec_priority(pod: KubeDict) -> int | None:
    """`spec.priority` as set by admission; None when the pod has none."""
    value = (pod.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else None


def is_labelled_be(pod: KubeDict) -> bool:
    return get_pod_qos_class_raw(pod) is QoSClass.BE


def is_active(pod: KubeDict) -> bool:
    """Not yet terminated (upstream `IsPodActive`)."""
    status = pod.get("status") or {}
    return status.get("phase") not in ("Succeeded", "Failed") and not (
        pod.get("metadata") or {}
    ).get("deletionTimestamp")


def evictable_by_priority(pod: KubeDict, feature: str, priority_threshold: int) -> bool:
    """A candidate of a priority-ordered evictor: active, labelled `eviction-enabled: "true"`,
    with a priority (class default when `spec.priority` is 0 or absent) at most
    `priority_threshold`, and allowed to `feature` by its eviction policy."""
    annotations = (pod.get("metadata") or {}).get("annotations")
    return (
        is_active(pod)
        and pod_evict_enabled(pod)
        and get_pod_priority_value_with_default(pod) <= priority_threshold
        and is_eviction_allowed(annotations, feature)
    )


def class_request(pod: KubeDict, resource: str) -> tuple[str, int]:
    """What `pod` requests of `resource` (`cpu` or `memory`) as its priority class counts it:
    koord-mid and koord-batch pods their `mid-`/`batch-` extended resource, the others the native
    one (milli-cpu, bytes). Raises ValueError for a malformed request."""
    names = RESOURCE_NAME_MAP.get(get_pod_priority_class_with_default(pod), {})
    name = names.get(resource, resource)
    return name, max(pod_requests(pod).get(name, 0), 0)


def allocatable_release(
    requested: dict[str, int], allocatable: dict[str, int], threshold: int, lower: int
) -> dict[str, int]:
    """Per resource, what to release so the requests go down to `lower` % of the node's
    allocatable once they exceed `threshold` %: all of it where the node has none of that
    resource. Resources with nothing to release are left out."""
    release = {}
    for name, request in requested.items():
        available = allocatable.get(name, 0)
        if available <= 0:
            amount = request
        elif request / available > threshold / 100:
            amount = int(request - lower / 100 * available)
        else:
            continue
        if amount > 0:
            release[name] = amount
    return release


def checked_class_request(pod: KubeDict, resource: str,
                          log: logging.Logger) -> tuple[str, int] | None:
    """`class_request`, or None, logged on `log`, when the pod's request is malformed."""
    try:
        return class_request(pod, resource)
    except ValueError as e:
        log.warning("%s: pod %s has a malformed request: %s", log.name.rsplit(".", 1)[-1],
                    pod_name(pod), e)
        return None


def allocatable_evict_release(
    ctx: Context, node: KubeDict, resource: str, feature: str, log: logging.Logger,
    threshold: int | None, lower: int | None, limit: int | None,
) -> dict[str, int]:
    """CPUAllocatableEvict's / MemoryAllocatableEvict's release per resource (`resource` is
    `cpu` or `memory`): the requests of the pods at or below priority `limit`, summed per
    resource their class requests, over `threshold` % of the node's allocatable go down to
    `lower` %. Empty when nothing is over its threshold, or, logged on the strategy's `log`,
    when the NodeSLO lacks a field or has an invalid one, or the node's allocatable is
    malformed. A missing lower percent is refused for memory too: upstream's memory check lets
    it through, then dereferences it and crashes the round."""
    who = log.name.rsplit(".", 1)[-1]
    if threshold is None or lower is None or limit is None:
        log.warning("%s: NodeSLO has no %sAllocatableEvictThresholdPercent, "
                    "%sAllocatableEvictLowerPercent or allocatableEvictPriorityThreshold, "
                    "%s skipped", who, resource, resource, feature)
        return {}
    if threshold < 0 or lower >= threshold or limit > PRIORITY_MID_VALUE_MAX:
        log.warning("%s: NodeSLO %sAllocatableEvictThresholdPercent %d / LowerPercent %d / "
                    "allocatableEvictPriorityThreshold %d invalid (need 0 <= lower < threshold, "
                    "priority at most %d), %s skipped", who, resource, threshold, lower, limit,
                    PRIORITY_MID_VALUE_MAX, feature)
        return {}
    requested: dict[str, int] = {}
    for pod in ctx.states.get_all_pods():
        if get_pod_priority_value_with_default(pod) > limit:
            continue
        request = checked_class_request(pod, resource, log)
        if request is not None:
            name, value = request
            requested[name] = requested.get(name, 0) + value
    try:
        allocatable = resource_list((node.get("status") or {}).get("allocatable"))
    except ValueError as e:
        log.warning("%s: node has a malformed allocatable, %s skipped: %s", who, feature, e)
        return {}
    release = allocatable_release(requested, allocatable, threshold, lower)
    if release:
        log.info("%s: requests %s over %d%% of allocatable, release %s", who, requested,
                 threshold, release)
    return release


def released_classes(release: dict[str, int]) -> frozenset[PriorityClass]:
    """The priority classes whose pods' requests count toward `release`: only the mid and
    batch resources name one (upstream `ReverseResourceNameMap`), so a release of native
    `cpu`/`memory` is never credited, as upstream."""
    return frozenset(
        PriorityClass(priority_class) for priority_class, names in RESOURCE_NAME_MAP.items()
        if any(name in release for name in names.values()))


def _label_priority(pod: KubeDict, default: int) -> int:
    """The `koordinator.sh/priority` label read as upstream does here (base 10, Go `Atoi`),
    `default` when missing or not an integer."""
    raw = ((pod.get("metadata") or {}).get("labels") or {}).get(LABEL_POD_PRIORITY)
    if raw is None:
        return default
    try:
        return parse_int_value(LABEL_POD_PRIORITY, raw)
    except MalformedValueError:
        return default


def priority_order(
    victims: list[tuple[KubeDict, int]], warnings: AnnotationWarnings
) -> list[tuple[KubeDict, int]]:
    """`(pod, amount)` in upstream's eviction order: `eviction-priority` annotation ascending
    (0 when missing or malformed, reported through `warnings`), priority ascending, the
    `koordinator.sh/priority` label ascending (the priority when unusable), larger amount
    (usage or request) first."""

    def key(victim: tuple[KubeDict, int]) -> tuple[int, int, int, int]:
        pod, amount = victim
        try:
            eviction_priority = parse_eviction_priority(
                (pod.get("metadata") or {}).get("annotations"))
        except MalformedValueError as err:
            warnings.report(pod, "Pod", err)
            eviction_priority = 0
        priority = get_pod_priority_value_with_default(pod)
        return eviction_priority, priority, _label_priority(pod, priority), -amount

    return sorted(victims, key=key)


class AnnotationWarnings:
    """Says once per distinct value that ``source`` ignores an object's malformed annotation."""

    __slots__ = ("_ctx", "_source", "_reported")

    # Pods come and go: past this many remembered values the memory starts afresh (at worst
    # one more line and one more event, which the recorder folds into the earlier one).
    MAX_REMEMBERED = 1024

    def __init__(self, ctx: Context, source: str) -> None:
        self._ctx = ctx
        self._source = source
        self._reported: dict[tuple[str, str, str, str], str | None] = {}

    def report(self, obj: KubeDict, kind: str, err: MalformedValueError) -> None:
        """Log and record (a Warning event on ``obj``, a ``kind`` such as ``Node``) that
        ``err.key`` is ignored, unless this value was reported already."""
        md = obj.get("metadata") or {}
        namespace, name = md.get("namespace") or "", md.get("name") or ""
        value = (md.get("annotations") or {}).get(err.key)
        seen = (kind, namespace, name, err.key)
        if seen in self._reported and self._reported[seen] == value:
            return
        if len(self._reported) >= self.MAX_REMEMBERED:
            self._reported.clear()
        self._reported[seen] = value
        where = f"{namespace}/{name}" if namespace else name
        message = (f"{self._source}: ignoring malformed annotation {err.key} on "
                   f"{kind.lower()} {where}: {err.reason}")
        logger.warning("%s", message)
        recorder = self._ctx.event_recorder
        if recorder is not None:
            ref = {"kind": kind, "apiVersion": "v1", "namespace": namespace, "name": name,
                   "uid": md.get("uid")}
            recorder.event(ref, WARNING, REASON_MALFORMED_ANNOTATION, message)
