"""Object limiters on a fake clock: upstream controller_test.go's limiter cases (a workload
evicted once is limited until its bucket refills; namespaces limited by an int only; nothing
tracked for bare pods, unknown workloads or a zero duration) plus burst and expiry."""

from __future__ import annotations

from typing import Any

from descheduler.apis.config.args import MigrationControllerArgs
from descheduler.controllers.migration.objectlimiter import ObjectLimiters
from descheduler.controllers.migration.testing import Stores, owner, pod, workload
from pkg.util.clock import FakeClock

RS = owner("ReplicaSet", "web")
RS_10 = workload("ReplicaSet", "web", 10)


def limiters(args: dict[str, Any] | None = None) -> tuple[ObjectLimiters, FakeClock]:
    clock = FakeClock()
    stores = Stores.of(workloads=[RS_10])
    return ObjectLimiters(MigrationControllerArgs.model_validate(args or {}), stores.finder,
                          clock), clock


def test_workload_limited_until_its_bucket_refills() -> None:
    # Default: workload, 5 minutes, maxMigrating = GetMaxMigrating(10, nil) = 2 → a token per
    # 150 s, burst 1.
    lim, clock = limiters()
    p, sibling = pod("web-0", owners=[RS]), pod("web-1", owners=[RS])
    assert not lim.limited(p)
    lim.track(p)
    assert lim.limited(p) and lim.limited(sibling)
    assert not lim.limited(pod("other", owners=[owner("ReplicaSet", "other")]))
    clock.step(149)
    assert lim.limited(sibling)
    clock.step(1)
    assert not lim.limited(sibling)


def test_configured_max_migrating_and_burst() -> None:
    lim, clock = limiters({"objectLimiters": {"workload": {"duration": "60s", "maxMigrating": 1,
                                                           "burst": 2}}})
    p = pod("web-0", owners=[RS])
    lim.track(p)
    assert not lim.limited(p)
    lim.track(p)
    assert lim.limited(p)
    clock.step(60)
    assert not lim.limited(p)


def test_namespace_limiter_takes_an_int_only() -> None:
    lim, _ = limiters({"objectLimiters": {"namespace": {"duration": "60s", "maxMigrating": 1}}})
    p = pod("bare")
    lim.track(p)
    assert lim.limited(p) and lim.limited(pod("web-0", owners=[RS]))
    assert not lim.limited(pod("x", namespace="other"))
    lim, _ = limiters({"objectLimiters": {"namespace": {"duration": "60s",
                                                        "maxMigrating": "50%"}}})
    lim.track(p)
    assert not lim.limited(p)


def test_nothing_tracked() -> None:
    lim, _ = limiters()
    for p in (pod("bare"), pod("orphan", owners=[owner("ReplicaSet", "gone")])):
        lim.track(p)
        assert not lim.limited(p)
    lim, _ = limiters({"objectLimiters": {"workload": {"duration": "0s"}}})
    p = pod("web-0", owners=[RS])
    lim.track(p)
    assert not lim.limited(p)


def test_unused_buckets_are_forgotten() -> None:
    lim, clock = limiters({"objectLimiters": {"workload": {"duration": "100s",
                                                           "maxMigrating": 1}}})
    p = pod("web-0", owners=[RS])
    lim.track(p)
    clock.step(149)
    lim.track(p)  # refilled at 100 s: takes the token again
    assert lim.limited(p)
    clock.step(150)
    # 1.5 × duration since the last track: a fresh bucket, full.
    assert not lim.limited(p)
    lim.track(p)
    assert lim.limited(p)
