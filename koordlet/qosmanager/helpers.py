"""Metric and pod helpers of the strategies: upstream `qosmanager/helpers` (`CollectNodeMetrics`,
`CollectPodMetricLast`, the BE-pod sort of the evictors).

"Last" values come from the window `2 × --collect-res-used-interval` before now, as upstream;
a strategy that finds no point skips its round.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.extension.qos import QoSClass, get_pod_qos_class_raw
from koordlet.qosmanager.framework import Context, KubeDict


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
