"""The scheduler: its profiles, queue, cache and snapshot, and the loop that drives them.

Corresponds to kube-scheduler ``pkg/scheduler/scheduler.go`` (``Scheduler``, ``Run``). One
scheduling thread takes pods one at a time (``schedule_one``, in ``schedule_one.py`` as
upstream's ``ScheduleOne``); binding cycles run on a worker pool, so the next pod is scheduled
while the API call is in flight. The latest diagnosis of each pending pod is kept for
``/debug/pods/<ns>/<name>``.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pkg.util.clock import REAL_CLOCK, Clock
from scheduler.diagnosis import PendingDiagnoses, with_states
from scheduler.framework.cache import Cache
from scheduler.framework.queue import SchedulingQueue
from scheduler.framework.runtime import Framework, PermitTimer
from scheduler.framework.snapshot import Snapshot
from scheduler.frameworkext.interface import ClientSet, PodState, PodStateExplainer
from scheduler.metrics.metrics import SchedulerMetrics
from scheduler.schedule_one import GenericScheduler, PodGetter, ScheduleOne


class Scheduler(ScheduleOne):
    def __init__(self, profiles: dict[str, Framework], queue: SchedulingQueue, cache: Cache,
                 snapshot: Snapshot, *, percentage_of_nodes_to_score: int = 0,
                 client: ClientSet | None = None,
                 metrics: SchedulerMetrics | None = None, clock: Clock = REAL_CLOCK,
                 bind_workers: int = 16, rng: random.Random | None = None,
                 pod_getter: PodGetter | None = None) -> None:
        self.profiles = profiles
        self.queue = queue
        self.cache = cache
        self.snapshot = snapshot
        self.client = client
        self.metrics = metrics
        self.clock = clock
        self.pod_getter = pod_getter
        self.rng = rng or random.Random()
        self.algorithm = GenericScheduler(percentage_of_nodes_to_score, self.rng)
        self.default_percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.binder_pool = ThreadPoolExecutor(bind_workers, thread_name_prefix="binding")
        self.permit_timer = PermitTimer(clock)
        self.diagnoses = PendingDiagnoses()
        self.inflight = 0
        self.inflight_cond = threading.Condition()
        self._stop = threading.Event()

    def run(self, stop: threading.Event | None = None) -> None:
        """Schedule until ``stop`` (or ``self.stop()``) is set."""
        stop = stop or self._stop
        while not stop.is_set() and not self._stop.is_set():
            self.schedule_one(timeout=0.5)

    def stop(self) -> None:
        self._stop.set()
        self.queue.close()
        self.permit_timer.stop()
        self.binder_pool.shutdown(wait=True)

    def wait_for_bindings(self, timeout: float | None = None) -> bool:
        """Block until no binding cycle is in flight (tests and benchmarks)."""
        with self.inflight_cond:
            return self.inflight_cond.wait_for(lambda: self.inflight == 0, timeout)

    # Why pending -------------------------------------------------------------------------

    def diagnosis_of(self, key: str) -> dict[str, Any] | None:
        """The pod's last failed attempt, with what plugins holding it say (its gang)."""
        return with_states(key, self.diagnoses.get(key), self._pod_states(key))

    def _pod_states(self, key: str) -> list[PodState]:
        states: dict[str, PodState] = {}
        for fwk in self.profiles.values():
            for plugin in fwk.instances.values():
                if isinstance(plugin, PodStateExplainer):
                    state = plugin.explain_pod(key)
                    if state is not None:
                        # Each profile's instance sees the same pod: the first one says it.
                        states.setdefault(state.section, state)
        return list(states.values())

    def pending_diagnoses(self) -> list[str]:
        return self.diagnoses.keys()

    def forget_pod(self, key: str) -> None:
        """The pod is gone (deleted or bound elsewhere): drop what we kept about it."""
        self.diagnoses.forget(key)
