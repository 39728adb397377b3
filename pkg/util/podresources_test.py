"""Pod request arithmetic as kube-scheduler computes it."""

from __future__ import annotations

import pytest

from pkg.util.podresources import (
    pod_limits,
    pod_non_zero_requests,
    pod_requests,
    quantity_int,
)


def _c(requests: dict | None = None, limits: dict | None = None, **kw: object) -> dict:
    return {"name": "c", "resources": {"requests": requests or {}, "limits": limits or {}},
            **kw}


def test_containers_add_up_and_init_containers_raise_to_their_maximum() -> None:
    pod = {"spec": {
        "containers": [_c({"cpu": "100m", "memory": "500Mi"}), _c({"cpu": "250m"})],
        "initContainers": [_c({"cpu": "2"}), _c({"memory": "1Gi"})],
        "overhead": {"cpu": "10m"}}}
    assert pod_requests(pod) == {"cpu": 2010, "memory": 1024 ** 3}


def test_sidecars_run_next_to_the_containers() -> None:
    pod = {"spec": {"containers": [_c({"cpu": "1"})],
                    "initContainers": [_c({"cpu": "500m"}, restartPolicy="Always"),
                                       _c({"cpu": "1200m"})]}}
    # the regular init container runs with the sidecar: max(1000+500, 1200+500)
    assert pod_requests(pod)["cpu"] == 1700


def test_non_zero_defaults_only_for_missing_requests() -> None:
    pod = {"spec": {"containers": [_c(), _c({"cpu": "0", "memory": "0"})]}}
    assert pod_non_zero_requests(pod) == (100, 200 * 1024 * 1024)


def test_quantities_and_limits() -> None:
    assert quantity_int("cpu", "1.5") == 1500
    assert quantity_int("kubernetes.io/batch-cpu", "2000") == 2000
    assert quantity_int("memory", "1Ki") == 1024
    assert pod_limits({"spec": {"containers": [_c(limits={"cpu": "2"})]}}) == {"cpu": 2000}
    with pytest.raises(ValueError):
        quantity_int("cpu", "two")
