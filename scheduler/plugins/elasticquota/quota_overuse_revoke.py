"""Over-use revocation: a quota that uses more than its runtime for too long gives pods back.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/quota_overuse_revoke.go``
(``QuotaOverUsedRevokeController``, ``QuotaOverUsedGroupMonitor``). Runtime shrinks when other
quotas claim what they lent, but pods already running keep their resources; this controller
takes them back (§8.7). Active only with ``monitorAllQuotas`` and ``enableRuntimeQuota``; every
``revokePodInterval`` each quota but the system and root ones is checked: once its used has not
fitted its runtime for longer than ``delayEvictTime``, its assigned preemptible pods are taken
from the least important up until used fits; if even all of them do not make it fit they are all
evicted, else they are put back from the most important down and only those that do not fit are
evicted (policy/v1 Eviction, through ``pkg.evictions``; the ServiceAccount needs create on
``pods/eviction``: our chart grants it, upstream's does not). "Fits" is upstream's
``quotav1.LessThanOrEqual(used, runtime)``: every runtime dimension the used list names.

Upstream only logs a revocation; here, given the scheduler's event recorder, each revoked pod
also gets a Normal ``Revoked`` event naming its quota's used and runtime (an addition), so
``kubectl get events`` tells a revoked pod from a preempted (``Preempted``) one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from api.extension.elastic_quota import ROOT_QUOTA_NAME, SYSTEM_QUOTA_NAME
from api.extension.objects import KubeDict
from pkg.client.errors import ApiError, is_forbidden, is_not_found, is_too_many_requests
from pkg.evictions import evict_pod
from pkg.util.clock import Clock
from pkg.util.periodic import Periodic
from scheduler.apis.config import ElasticQuotaArgs
from scheduler.framework.plugins.defaultpreemption.ordering import importance_key
from scheduler.framework.types import PodInfo
from scheduler.frameworkext.interface import ClientSet, EventRecorder
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import ResourceInts
from scheduler.plugins.elasticquota.managers import QuotaSource
from scheduler.plugins.elasticquota.state import print_resource_list

log = logging.getLogger(__name__)

NAME = "QuotaOverUsedRevokeController"
REVOKED_REASON = "Revoked"

_NOT_MONITORED = frozenset({SYSTEM_QUOTA_NAME, ROOT_QUOTA_NAME})


class PodStore(Protocol):
    """The pod informer's indexer: pods by ``namespace/name``."""

    def get_by_key(self, key: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """An assigned preemptible pod of the quota and what it counts for there."""

    pod: KubeDict
    request: ResourceInts


def fits(used: Mapping[str, int], runtime: Mapping[str, int]) -> bool:
    """``quotav1.LessThanOrEqual(used, runtime)``: the runtime's dimensions that used names."""
    return all(used[name] <= limit for name, limit in runtime.items() if name in used)


def _add(a: Mapping[str, int], b: Mapping[str, int], sign: int) -> ResourceInts:
    out = dict(a)
    for name, v in b.items():
        out[name] = out.get(name, 0) + sign * v
    return out


def choose_victims(used: Mapping[str, int], runtime: Mapping[str, int],
                   candidates: Sequence[Candidate]) -> list[KubeDict]:
    """The pods to evict so that used fits runtime; ``candidates`` least important first.

    Take pods from the least important until used fits; if it never does, all taken are
    evicted; else put them back from the most important down, keeping those that still fit.
    """
    taken: list[Candidate] = []
    for c in candidates:
        if fits(used, runtime):
            break
        used = _add(used, c.request, -1)
        taken.append(c)
    if not fits(used, runtime):
        return [c.pod for c in taken]
    victims = []
    for c in reversed(taken):
        back = _add(used, c.request, 1)
        if fits(back, runtime):
            used = back
        else:
            victims.append(c.pod)
    return victims


class _Monitor:
    """When a quota last fitted its runtime (upstream ``QuotaOverUsedGroupMonitor``)."""

    __slots__ = ("last_under_used",)

    def __init__(self, now: float) -> None:
        self.last_under_used = now


class QuotaOverUsedRevokeController:
    """Evicts pods of quotas that stay over their runtime (see the module docstring)."""

    def __init__(self, manager: QuotaSource, client: ClientSet, pods: PodStore,
                 clock: Clock, args: ElasticQuotaArgs,
                 recorder: EventRecorder | None = None) -> None:
        self.manager = manager
        self.recorder = recorder
        self.client = client
        self.pods = pods
        self.clock = clock
        self.args = args
        self._monitors: dict[str, _Monitor] = {}
        self._loop = Periodic(NAME, self.revoke, args.revoke_pod_interval, clock)

    @property
    def enabled(self) -> bool:
        return self.args.monitor_all_quotas and self.args.enable_runtime_quota

    def start(self) -> None:
        if not self.enabled:
            log.info("%s: monitorAllQuotas or enableRuntimeQuota is off, not started", NAME)
            return
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def _sync_monitors(self) -> None:
        names = self.manager.quota_names() - _NOT_MONITORED
        now = self.clock.monotonic()
        for name in names - self._monitors.keys():
            self._monitors[name] = _Monitor(now)
        for name in self._monitors.keys() - names:
            del self._monitors[name]

    def over_used_too_long(self, name: str) -> bool:
        """Whether the quota has not fitted its runtime for longer than delayEvictTime (the
        wait starts again after each positive answer, as upstream's ``monitor``)."""
        monitor = self._monitors.get(name)
        summary = self.manager.quota_summary(name)
        if monitor is None or summary is None:
            return False
        now = self.clock.monotonic()
        if fits(summary.used, summary.runtime):
            monitor.last_under_used = now
            return False
        over_for = now - monitor.last_under_used
        log.debug("%s: quota %s uses %s over its runtime %s for %.1fs", NAME, name,
                  summary.used, summary.runtime, over_for)
        if over_for > self.args.delay_evict_time:
            monitor.last_under_used = now
            return True
        return False

    def victims_of(self, name: str) -> list[KubeDict]:
        """The pods to evict from the quota now."""
        summary = self.manager.quota_summary(name)
        if summary is None:
            return []
        now = self.clock.now()
        found: list[tuple[PodInfo, Candidate]] = []
        for key, entry in self.manager.assigned_pods(name).items():
            pod = self.pods.get_by_key(key)
            if pod is None or entry.non_preemptible:
                continue
            found.append((PodInfo(pod), Candidate(pod, entry.request)))
        # Least important first: lower priority, then the later start.
        found.sort(key=lambda pc: importance_key(pc[0], now), reverse=True)
        victims = choose_victims(summary.used, summary.runtime, [c for _, c in found])
        for pod in victims:
            md = pod.get("metadata") or {}
            log.info("%s: pod %s/%s should be revoked, quota %s used %s over runtime %s", NAME,
                     md.get("namespace", ""), md.get("name", ""), name, summary.used,
                     summary.runtime)
        return victims

    def revoke(self) -> list[str]:
        """One round: evict the victims of every quota over its runtime for too long; returns
        the ``namespace/name`` of the pods whose eviction the API accepted."""
        self._sync_monitors()
        evicted = []
        for name in sorted(self._monitors):
            if not self.over_used_too_long(name):
                continue
            summary = self.manager.quota_summary(name)
            for pod in self.victims_of(name):
                md = pod.get("metadata") or {}
                key = f"{md.get('namespace', '')}/{md.get('name', '')}"
                try:
                    evict_pod(self.client, pod)
                except ApiError as err:
                    if is_not_found(err):
                        log.debug("%s: pod %s already gone", NAME, key)
                    elif is_too_many_requests(err):
                        log.warning("%s: evicting pod %s blocked by its disruption budget: %s",
                                    NAME, key, err)
                    elif is_forbidden(err):
                        # Upstream's chart grants koord-scheduler no pods/eviction.
                        log.error("%s: may not revoke pod %s of quota %s: koord-scheduler's "
                                  "ServiceAccount needs create on pods/eviction: %s", NAME, key,
                                  name, err)
                    else:
                        log.error("%s: failed to revoke pod %s of quota %s: %s", NAME, key,
                                  name, err)
                    continue
                log.info("%s: revoked pod %s of quota %s", NAME, key, name)
                if self.recorder is not None and summary is not None:
                    self.recorder.eventf(
                        pod, None, "Normal", REVOKED_REASON, "Revoking",
                        "quota %s used %s over its runtime %s for longer than %gs",
                        name, print_resource_list(summary.used),
                        print_resource_list(summary.runtime), self.args.delay_evict_time)
                evicted.append(key)
        return evicted


__all__ = ["NAME", "REVOKED_REASON", "Candidate", "PodStore", "QuotaOverUsedRevokeController",
           "choose_victims", "fits"]
