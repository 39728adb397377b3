from typing import Any

import pytest

from api.extension.amplification import ANNOTATION_NODE_RAW_ALLOCATABLE
from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricCacheConfig, MetricSample
from koordlet.prediction.peak_predictor import (
    NODE_UID,
    SYS_UID,
    PeakPredictServer,
    PredictionConfig,
    node_allocatable,
    priority_uid,
    prod_reclaimable,
)

GI = 1 << 30
T0 = 1_700_000_000.0


def pod(uid: str, cpu: str, memory: str, priority: int | None = 9500,
        created: str = "2023-01-01T00:00:00Z") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": cpu, "memory": memory}}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"uid": uid, "name": uid, "namespace": "default",
                         "creationTimestamp": created},
            "spec": spec, "status": {"phase": "Running"}}


NODE = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "16", "memory": "64Gi"}}}


def feed(cache: MetricCache, t: float, pods: dict[str, tuple[float, float]],
         node: tuple[float, float]) -> None:
    samples = [MetricSample(mt.NODE_CPU_USAGE, {}, t, node[0]),
               MetricSample(mt.NODE_MEMORY_USAGE, {}, t, node[1])]
    for uid, (cpu, memory) in pods.items():
        samples += [MetricSample(mt.POD_CPU_USAGE, {mt.POD_UID: uid}, t, cpu),
                    MetricSample(mt.POD_MEMORY_USAGE, {mt.POD_UID: uid}, t, memory)]
    cache.append(samples)


def trained(pods: list[dict[str, Any]], usage: dict[str, tuple[float, float]],
            node: tuple[float, float], rounds: int = 30) -> PeakPredictServer:
    cache = MetricCache(MetricCacheConfig())
    server = PeakPredictServer(cache, PredictionConfig())
    for i in range(rounds):
        now = T0 + 60 * (i + 1)
        feed(cache, now - 30, usage, node)
        server.training(now, pods)
    return server


def test_models_track_pods_classes_node_and_sys() -> None:
    pods = [pod("a", "4", "8Gi"), pod("b", "2", "4Gi", priority=5500)]
    server = trained(pods, {"a": (1.0, 2 * GI), "b": (0.5, 1 * GI)}, (3.0, 6 * GI))
    a = server.get_prediction("a")
    # Upper bucket bounds: within one 5 % bucket above the steady usage.
    assert 1000 <= a["p95"]["cpu"] <= 1060
    assert 2 * GI <= a["p98"]["memory"] <= 2.1 * GI
    assert 500 <= server.get_prediction(priority_uid("koord-batch"))["max"]["cpu"] <= 550
    assert 3000 <= server.get_prediction(NODE_UID)["p90"]["cpu"] <= 3160
    # sys = node − all pods = 1.5 cores, 3 GiB.
    sys = server.get_prediction(SYS_UID)
    assert 1500 <= sys["p95"]["cpu"] <= 1580
    assert 3 * GI <= sys["p98"]["memory"] <= 3.2 * GI
    # A class with no pods predicts the first bucket's end (25m, 5 MiB), as upstream.
    assert server.get_prediction(priority_uid("koord-mid"))["max"] == {"cpu": 25,
                                                                       "memory": 5 << 20}


def test_prod_reclaimable_is_min_of_pod_and_priority_predictors() -> None:
    pods = [pod("a", "4", "8Gi"), pod("b", "2", "4Gi", priority=5500)]
    server = trained(pods, {"a": (1.0, 2 * GI), "b": (0.5, 1 * GI)}, (3.0, 6 * GI))
    now = T0 + 60 * 31
    reclaimable, peak = prod_reclaimable(server, NODE, pods, now)
    a = server.get_prediction("a")
    pod_peak_cpu = int(a["p95"]["cpu"] * 1.1)
    # pod predictor: request − peak of the one prod pod (batch pod b is ignored).
    pod_reclaim_cpu = 4000 - pod_peak_cpu
    # priority predictor: prod requests − (sys + prod + no-class) × 1.1.
    prio_cpu = sum(server.get_prediction(uid)["p95"]["cpu"]
                   for uid in (SYS_UID, priority_uid("koord-prod"), priority_uid("")))
    prio_unreclaimable = int(prio_cpu * 1.1)
    assert reclaimable["cpu"] == min(pod_reclaim_cpu, 4000 - prio_unreclaimable)
    assert peak["cpu"] == max(pod_peak_cpu, prio_unreclaimable)
    assert 0 < reclaimable["memory"] < 8 * GI - 2 * GI


def test_cold_start_pods_count_their_requests_as_peak() -> None:
    young = pod("y", "3", "2Gi", created="2023-11-14T22:00:00Z")  # T0 is 22:13:20
    server = trained([young], {"y": (0.2, GI)}, (1.0, 4 * GI))
    reclaimable, peak = prod_reclaimable(server, NODE, [young], T0 + 60 * 31)
    assert peak["cpu"] >= 3000
    assert reclaimable["cpu"] == 0  # nothing reclaimable until the pod has history


@pytest.mark.parametrize("raw", ["[" * 5000 + "]" * 5000, "[1]", "{not json"])
def test_malformed_raw_allocatable_annotation_falls_back_to_allocatable(raw: str) -> None:
    # Nested 5,000 levels it raised RecursionError; a JSON array raised AttributeError.
    node = {"metadata": {"name": "n1", "annotations": {ANNOTATION_NODE_RAW_ALLOCATABLE: raw}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    assert node_allocatable(node) == {"cpu": 4000, "memory": 8 * 1024**3}
