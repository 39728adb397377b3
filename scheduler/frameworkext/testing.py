"""Test helpers: the handle a plugin under test is built with.

Corresponds to kube-scheduler's ``pkg/scheduler/testing/framework`` as plugin tests use it
(``NewFramework`` with ``RegisterQueueSortPlugin`` and ``RegisterBindPlugin``): a real
framework with only the two plugins every profile needs, over what the test hands in.
"""

from __future__ import annotations

from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.framework.binder import Binder
from scheduler.framework.plugins.defaultbinder import DefaultBinder
from scheduler.framework.plugins.queuesort import PrioritySort
from scheduler.framework.runtime import Framework, FrameworkDeps
from scheduler.framework.snapshot import Snapshot
from scheduler.frameworkext.interface import EventRecorder, InformerFactory


def new_handle(*, snapshot: Snapshot | None = None, clock: Clock = REAL_CLOCK,
               informer_factory: InformerFactory | None = None,
               binder: Binder | None = None,
               recorder: EventRecorder | None = None) -> Framework:
    return Framework(
        "test", {"queueSort": [(PrioritySort.name, 0)], "bind": [(DefaultBinder.name, 0)]},
        {PrioritySort.name: PrioritySort, DefaultBinder.name: DefaultBinder}, {},
        FrameworkDeps(snapshot=snapshot if snapshot is not None else Snapshot(), clock=clock,
                      informer_factory=informer_factory, binder=binder,
                      recorder_factory=(lambda _profile: recorder) if recorder is not None
                      else None))
