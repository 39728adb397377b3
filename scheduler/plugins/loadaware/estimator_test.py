from __future__ import annotations

import pytest

from api.extension.amplification import ANNOTATION_NODE_RAW_ALLOCATABLE
from api.extension.load_aware import ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS
from scheduler.plugins.loadaware.estimator import DefaultEstimator, is_prod_pod
from scheduler.plugins.loadaware.testing import make_node, make_pod
from scheduler.plugins.loadaware.vector import round_half_away

DEFAULT_FACTORS = {"cpu": 85, "memory": 70}


def estimate(pod: dict, factors: dict[str, int] = DEFAULT_FACTORS,
             allow_customize: bool = False) -> dict[str, int]:
    return DefaultEstimator(factors, allow_customize).estimate_pod(pod)


def test_worked_example_of_the_reference():
    # request = limit 4 cpu / 8Gi with factors 85/70.
    res = {"cpu": "4", "memory": "8Gi"}
    pod = make_pod("p", requests=res, limits=res)
    assert estimate(pod) == {"cpu": 3400, "memory": 6012954214}


@pytest.mark.parametrize("requests,limits,want", [
    # Nothing asked: 250m and 200 MiB.
    (None, None, {"cpu": 250, "memory": 209715200}),
    # The larger of request and limit is scaled.
    ({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"},
     {"cpu": 1700, "memory": round(2 * 1024**3 * 0.7)}),
    # A request above its limit is estimated at the limit at most.
    ({"cpu": "4"}, {"cpu": "2"}, {"cpu": 2000, "memory": 209715200}),
])
def test_request_limit_and_defaults(requests, limits, want):
    assert estimate(make_pod("p", requests=requests, limits=limits)) == want


@pytest.mark.parametrize("milli,factor,want", [
    (1, 50, 1),  # 0.5 goes up (Python's round would give 0)
    (5, 50, 3),  # 2.5 goes up (round-half-even would give 2)
    (3, 33, 1),  # 0.99
])
def test_rounding_is_half_away_from_zero(milli, factor, want):
    pod = make_pod("p", requests={"cpu": f"{milli}m", "memory": "1Gi"})
    assert estimate(pod, {"cpu": factor, "memory": 70})["cpu"] == want


def test_round_half_away_negative_and_exact_halves():
    assert [round_half_away(x) for x in (-2.5, -0.4, 0.49999999999999994, 64.5)] == \
        [-3, 0, 0, 65]


@pytest.mark.parametrize("priority_class,requests,want", [
    # Batch pods consume batch resources (batch-cpu is already in millicores).
    ("koord-batch", {"kubernetes.io/batch-cpu": "2000", "kubernetes.io/batch-memory": "4Gi"},
     {"cpu": 1700, "memory": round(4 * 1024**3 * 0.7)}),
    # ...and fall back to the defaults when they ask for none.
    ("koord-batch", {"cpu": "8", "memory": "8Gi"}, {"cpu": 250, "memory": 209715200}),
    ("koord-mid", {"kubernetes.io/mid-cpu": "1000", "kubernetes.io/mid-memory": "1Gi"},
     {"cpu": 850, "memory": round(1024**3 * 0.7)}),
    # Mid resources have no default, and free pods are not estimated at all.
    ("koord-mid", {"cpu": "8"}, {"cpu": 0, "memory": 0}),
    ("koord-free", {"cpu": "8", "memory": "8Gi"}, {"cpu": 0, "memory": 0}),
    ("koord-prod", {"cpu": "1", "memory": "1Gi"}, {"cpu": 850, "memory": round(1024**3 * 0.7)}),
])
def test_priority_class_picks_the_resource_estimated(priority_class, requests, want):
    assert estimate(make_pod("p", requests=requests, priority_class=priority_class)) == want


def test_pod_annotation_overrides_factors_only_when_allowed():
    pod = make_pod("p", requests={"cpu": "1", "memory": "1Gi"},
                   annotations={ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS: '{"cpu": 50}'})
    assert estimate(pod)["cpu"] == 850
    got = estimate(pod, allow_customize=True)
    assert got == {"cpu": 500, "memory": round(1024**3 * 0.7)}  # memory keeps the args factor
    pod["metadata"]["annotations"][ANNOTATION_CUSTOM_ESTIMATED_SCALING_FACTORS] = "not json"
    assert estimate(pod, allow_customize=True)["cpu"] == 850


def test_node_allocatable_uses_raw_allocatable_when_annotated():
    est = DefaultEstimator(DEFAULT_FACTORS, False)
    node = make_node("n", cpu="96", memory="512Gi")
    assert est.estimate_node(node)["cpu"] == 96000
    node["metadata"]["annotations"][ANNOTATION_NODE_RAW_ALLOCATABLE] = '{"cpu": "48"}'
    got = est.estimate_node(node)
    assert (got["cpu"], got["memory"]) == (48000, 512 * 1024**3)
    node["metadata"]["annotations"][ANNOTATION_NODE_RAW_ALLOCATABLE] = '{"cpu": '
    assert est.estimate_node(node)["cpu"] == 96000


def test_prod_class_from_label_priority_or_qos():
    assert is_prod_pod(make_pod("p", priority_class="koord-prod"))
    assert not is_prod_pod(make_pod("p", priority_class="koord-batch"))
    # No label: a Guaranteed pod is LSR, hence prod; a BestEffort one is batch.
    res = {"cpu": "1", "memory": "1Gi"}
    assert is_prod_pod(make_pod("p", requests=res, limits=res))
    assert not is_prod_pod(make_pod("p"))
