"""Metric and pod helpers of the strategies: upstream `qosmanager/helpers` (`CollectNodeMetrics`,
`CollectPodMetricLast`, the BE-pod sort of the evictors).

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
from api.extension.qos import QoSClass, get_pod_qos_class_raw
from koordlet.qosmanager.framework import Context, KubeDict
from pkg.events.recorder import WARNING

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
