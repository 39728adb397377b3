"""The peak predictor (upstream ``pkg/koordlet/prediction``: ``predict_server.go``,
``peak_predictor.go``, ``config.go``).

``PeakPredictServer.training(now, pods, node_allocatable)`` runs once per
``--prediction-training-interval``: for every pod it queries p90 of ``pod_cpu_usage`` and
``pod_memory_usage`` over the last interval from the metric cache and adds one sample to the
pod's model (a CPU histogram in cores and a memory histogram in bytes); it also updates the
node model (``__node__``), one model per priority class (``__node-koord-prod__`` ...,
``__node-__`` for pods with no class) and ``__node-sys__`` = ``max(node − all pods, 0)``.
``get_prediction(uid)`` gives p60/p90/p95/p98/max of a model as ``{cpu: milli, memory: bytes}``.

``prod_reclaimable(server, node, pods, now)`` is upstream's ``minPredictor`` over the pod- and
priority-based predictors: reclaimable = per-resource min, peak = per-resource max.
Checkpointing (``--prediction-checkpoint-filepath``) is not implemented: models restart cold.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from api.extension.amplification import ANNOTATION_NODE_RAW_ALLOCATABLE
from api.extension.codec import decode_json
from api.extension.priority import PriorityClass, get_pod_priority_class_raw
from api.meta import parse_time
from koordlet.metriccache import aggregate, metric_types
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.prediction.histogram import DecayingHistogram, HistogramOptions
from pkg.util.podresources import CPU, MEMORY, pod_requests, resource_list

log = logging.getLogger(__name__)

HOUR = 3600.0
NODE_UID = "__node__"
SYS_UID = "__node-sys__"
CPU_OPTIONS = HistogramOptions.exponential(1024, 0.025, 1.05, 1e-4)
MEMORY_OPTIONS = HistogramOptions.exponential(float(1 << 41), float(5 << 20), 1.05, 1e-4)
PERCENTILES = {"p60": 0.60, "p90": 0.90, "p95": 0.95, "p98": 0.98, "max": 1.0}


def priority_uid(priority_class: PriorityClass | str) -> str:
    return f"__node-{PriorityClass(priority_class).value}__"


@dataclass(slots=True)
class PredictionConfig:
    """Flags of upstream ``prediction/config.go`` (seconds and percent)."""

    cold_start_duration: float = 24 * HOUR
    safety_margin_percent: int = 10
    memory_histogram_decay_half_life: float = 24 * HOUR
    cpu_histogram_decay_half_life: float = 12 * HOUR
    training_interval: float = 60.0
    model_expiration_duration: float = 1800.0


@dataclass(slots=True)
class _Model:
    cpu: DecayingHistogram
    memory: DecayingHistogram
    last_updated: float = 0.0


@dataclass(slots=True)
class PeakPredictServer:
    cache: MetricCache
    config: PredictionConfig = field(default_factory=PredictionConfig)
    models: dict[str, _Model] = field(default_factory=dict)

    def _model(self, uid: str) -> _Model:
        model = self.models.get(uid)
        if model is None:
            model = _Model(
                DecayingHistogram(CPU_OPTIONS, self.config.cpu_histogram_decay_half_life),
                DecayingHistogram(MEMORY_OPTIONS, self.config.memory_histogram_decay_half_life))
            self.models[uid] = model
        return model

    def _update(self, uid: str, cpu: float, memory: float, now: float) -> None:
        model = self._model(uid)
        model.cpu.add_sample(cpu, 1.0, now)
        model.memory.add_sample(memory, 1.0, now)
        model.last_updated = now

    def _p90(self, kind: str, props: Mapping[str, str], now: float) -> float | None:
        result = self.cache.query(kind, props, now - self.config.training_interval, now)
        try:
            return result.value(aggregate.P90)
        except aggregate.EmptyResultError:
            return None

    def training(self, now: float, pods: Iterable[Mapping[str, Any]]) -> None:
        """One training round over the node's current pods."""
        by_class: dict[PriorityClass, list[float]] = {pc: [0.0, 0.0] for pc in PriorityClass}
        all_pods = [0.0, 0.0]
        for pod in pods:
            uid = pod.get("metadata", {}).get("uid", "")
            props = {metric_types.POD_UID: uid}
            cpu = self._p90(metric_types.POD_CPU_USAGE, props, now)
            memory = self._p90(metric_types.POD_MEMORY_USAGE, props, now)
            if cpu is None or memory is None:
                continue
            self._update(uid, cpu, memory, now)
            acc = by_class[get_pod_priority_class_raw(pod)]
            acc[0] += cpu
            acc[1] += memory
            all_pods[0] += cpu
            all_pods[1] += memory
        for pc, (cpu, memory) in by_class.items():
            self._update(priority_uid(pc), cpu, memory, now)
        node_cpu = self._p90(metric_types.NODE_CPU_USAGE, {}, now)
        node_memory = self._p90(metric_types.NODE_MEMORY_USAGE, {}, now)
        if node_cpu is None or node_memory is None:
            return
        self._update(NODE_UID, node_cpu, node_memory, now)
        self._update(SYS_UID, max(node_cpu - all_pods[0], 0.0),
                     max(node_memory - all_pods[1], 0.0), now)

    def gc(self, now: float) -> None:
        """Drop models not updated within ``--prediction-model-expiration-duration``."""
        expired = [uid for uid, m in self.models.items()
                   if now - m.last_updated > self.config.model_expiration_duration]
        for uid in expired:
            del self.models[uid]

    def get_prediction(self, uid: str) -> dict[str, dict[str, int]]:
        """``{p60|p90|p95|p98|max: {cpu: milli, memory: bytes}}``; KeyError for no model."""
        model = self.models[uid]
        return {name: {CPU: int(model.cpu.percentile(p) * 1000),
                       MEMORY: int(model.memory.percentile(p))}
                for name, p in PERCENTILES.items()}


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """``node.koordinator.sh/raw-allocatable`` when set, else ``status.allocatable``."""
    raw = node.get("metadata", {}).get("annotations", {}).get(ANNOTATION_NODE_RAW_ALLOCATABLE)
    if raw:
        try:
            parsed = decode_json(ANNOTATION_NODE_RAW_ALLOCATABLE, raw)  # bounded nesting
            if isinstance(parsed, dict):
                return resource_list(parsed)
        except ValueError:
            log.warning("node %s: malformed %s", node.get("metadata", {}).get("name"),
                        ANNOTATION_NODE_RAW_ALLOCATABLE)
    return resource_list(node.get("status", {}).get("allocatable"))


def _considered(pod: Mapping[str, Any]) -> bool:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return get_pod_priority_class_raw(pod) in (PriorityClass.PROD, PriorityClass.NONE)


def _created(pod: Mapping[str, Any]) -> float | None:
    ts = pod.get("metadata", {}).get("creationTimestamp")
    return parse_time(ts).timestamp() if ts else None


Resources = dict[str, int]


def _margin(config: PredictionConfig) -> float:
    return (100 + config.safety_margin_percent) / 100


def _sub_floor(a: Resources, b: Resources) -> Resources:
    return {r: max(a.get(r, 0) - b.get(r, 0), 0) for r in (CPU, MEMORY)}


def _min(a: Resources, b: Resources) -> Resources:
    return {r: min(a.get(r, 0), b.get(r, 0)) for r in (CPU, MEMORY)}


def pod_reclaimable(server: PeakPredictServer, node: Mapping[str, Any],
                    pods: Iterable[Mapping[str, Any]], now: float) -> tuple[Resources, Resources]:
    """Upstream ``podReclaimablePredictor``: (reclaimable, peak)."""
    m = _margin(server.config)
    unreclaimable = {CPU: 0, MEMORY: 0}
    reclaimable = {CPU: 0, MEMORY: 0}
    unpredicted = {CPU: 0, MEMORY: 0}
    for pod in pods:
        if not _considered(pod):
            continue
        req = pod_requests(pod)
        created = _created(pod)
        uid = pod.get("metadata", {}).get("uid", "")
        if (created is not None and now - created < server.config.cold_start_duration) \
                or uid not in server.models:
            for r in (CPU, MEMORY):
                unpredicted[r] += req.get(r, 0)
            continue
        p = server.get_prediction(uid)
        peak = {CPU: int(p["p95"][CPU] * m), MEMORY: int(p["p98"][MEMORY] * m)}
        for r in (CPU, MEMORY):
            unreclaimable[r] += peak[r]
            reclaimable[r] += max(req.get(r, 0) - peak[r], 0)
    result = _min(_sub_floor(node_allocatable(node), unreclaimable), reclaimable)
    return result, {r: unreclaimable[r] + unpredicted[r] for r in (CPU, MEMORY)}


def priority_reclaimable(server: PeakPredictServer, node: Mapping[str, Any],
                         pods: Iterable[Mapping[str, Any]]) -> tuple[Resources, Resources]:
    """Upstream ``priorityReclaimablePredictor``: (reclaimable, peak)."""
    m = _margin(server.config)
    request = {CPU: 0, MEMORY: 0}
    for pod in pods:
        if _considered(pod):
            req = pod_requests(pod)
            for r in (CPU, MEMORY):
                request[r] += req.get(r, 0)
    cpu, memory = 0, 0
    for uid in (SYS_UID, priority_uid(PriorityClass.PROD), priority_uid(PriorityClass.NONE)):
        if uid in server.models:
            p = server.get_prediction(uid)
            cpu += p["p95"][CPU]
            memory += p["p98"][MEMORY]
    unreclaimable = {CPU: int(cpu * m), MEMORY: int(memory * m)}
    result = _min(_sub_floor(node_allocatable(node), unreclaimable),
                  _sub_floor(request, unreclaimable))
    return result, unreclaimable


def prod_reclaimable(server: PeakPredictServer, node: Mapping[str, Any],
                     pods: Iterable[Mapping[str, Any]], now: float) -> tuple[Resources, Resources]:
    """Upstream ``minPredictor``: per-resource min of results, max of peaks."""
    pods = list(pods)
    a, peak_a = pod_reclaimable(server, node, pods, now)
    b, peak_b = priority_reclaimable(server, node, pods)
    return _min(a, b), {r: max(peak_a[r], peak_b[r]) for r in (CPU, MEMORY)}
