"""Submits a scenario's pods on the scenario's clock and, like the Job controller, replaces a
batch pod that fails or is evicted before it succeeds (no upstream counterpart: upstream's
demos submit Deployments and SparkApplications to a real cluster).

Online pods are created at the start of the day and kept: koord-prod, QoS ``LS``, scheduled by
``koord-scheduler``, their ``sim.koordinator.sh/usage`` a diurnal curve anchored at the start
of the day. Batch pods carry the labels the ClusterColocationProfile selects, so the manager's
webhook makes them BE / koord-batch pods requesting ``kubernetes.io/batch-cpu`` and
``batch-memory``; each runs ``runSeconds`` (``sim.koordinator.sh/run-duration``) at its usage.
A gang job is its PodGroup (``scheduleTimeoutSeconds`` and ``minMember`` as the scenario says)
and its workers, labelled ``pod-group.scheduling.sigs.k8s.io``, created together once at its
submit time and never replaced: a gang that cannot fit stays pending, as a training job would.
A quota job's pods (``quota_pod``) are plain koord-scheduler pods in their team's namespace,
charged to the ElasticQuota named like it, and replaced like batch pods when revoked or
preempted. A rollout first creates its Reservations (``reservation``, one per replica, owned
by the pods labelled ``app: <name>``), then its backfill pods (plain pods like quota pods), then
the service's pods (online pods labelled as the rollout). A Deployment service is created at the
start of the day with its PodDisruptionBudget (``deployment``, ``pod_disruption_budget``): the
API server's ReplicaSet controller makes and replaces its pods, the driver only cordons the
nodes it is not pinned to until its pods are bound.
"""

from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from api.extension.coscheduling import LABEL_POD_GROUP
from koordlet.metricsadvisor.simulated import ANNOTATION_USAGE
from pkg.client import ApiError
from pkg.client.resources import (
    DEPLOYMENTS,
    NODES,
    POD_DISRUPTION_BUDGETS,
    POD_GROUPS,
    PODS,
    RESERVATIONS,
)
from pkg.client.rest import Client
from test.apiserver.nodes import RUN_DURATION

from .scenario import BatchJob, GangJob, OnlineService, QuotaJob, Resources, Rollout, Scenario

log = logging.getLogger(__name__)

SCHEDULER_NAME = "koord-scheduler"
LABEL_GROUP = "local-up.koordinator.sh/group"
LABEL_KIND = "local-up.koordinator.sh/kind"
ONLINE, BATCH, GANG, QUOTA = "online", "batch", "gang", "quota"
ROLLOUT, BACKFILL = "rollout", "backfill"
CREATE_WORKERS = 8
Obj = dict[str, Any]


@dataclass(slots=True)
class Slot:
    """One pod the workload wants running (online) or run to completion (batch), across the
    replacements of its attempts."""

    kind: str
    group: str
    namespace: str
    name: str
    submit_at: float  # seconds into the day
    retries_left: int
    attempt: int = 0
    current: str | None = None  # the name of the pod of the current attempt
    outcome: str = ""  # "", "Succeeded" or "Failed" (retries used up)

    def pod_name(self) -> str:
        return self.name if self.attempt == 0 else f"{self.name}-r{self.attempt}"


def online_pod(svc: OnlineService, name: str, day: float, epoch: float,
               kind: str = ONLINE) -> Obj:
    usage = {"cpu": svc.cpu_usage.annotation(day, epoch),
             "memory": svc.memory_usage.annotation(day, epoch)}
    res = {"cpu": svc.requests.cpu, "memory": svc.requests.memory}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": svc.namespace,
                     "labels": {"app": svc.name, LABEL_GROUP: svc.name, LABEL_KIND: kind,
                                "koordinator.sh/qosClass": "LS"},
                     "annotations": {ANNOTATION_USAGE: json.dumps(usage)}},
        "spec": {"schedulerName": SCHEDULER_NAME, "priorityClassName": "koord-prod",
                 "containers": [{"name": svc.name, "image": f"registry.local/{svc.name}:v1",
                                 "resources": {"requests": dict(res), "limits": dict(res)}}]},
    }


def deployment(svc: OnlineService, nodes: int, day: float, epoch: float) -> Obj:
    """A Deployment of the service's pods (``online_pod`` as its template)."""
    template = online_pod(svc, "", day, epoch)
    del template["metadata"]["name"], template["metadata"]["namespace"]
    del template["apiVersion"], template["kind"]
    # Gone at once when evicted: the replacement's wait is the ReplicaSet's and the scheduler's.
    template["spec"]["terminationGracePeriodSeconds"] = 0
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": svc.name, "namespace": svc.namespace,
                         "labels": {LABEL_GROUP: svc.name, LABEL_KIND: ONLINE}},
            "spec": {"replicas": svc.replica_count(nodes),
                     "selector": {"matchLabels": {"app": svc.name}},
                     "template": template}}


def pod_disruption_budget(svc: OnlineService) -> Obj:
    """The service's PodDisruptionBudget: ``minAvailable`` of its pods."""
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": svc.name, "namespace": svc.namespace,
                         "labels": {LABEL_GROUP: svc.name, LABEL_KIND: ONLINE}},
            "spec": {"minAvailable": svc.min_available,
                     "selector": {"matchLabels": {"app": svc.name}}}}


def batch_pod(job: BatchJob, name: str) -> Obj:
    res = {"cpu": job.requests.cpu, "memory": job.requests.memory}
    usage = {"cpu": job.usage.cpu, "memory": job.usage.memory}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": job.namespace,
                     "labels": {**job.labels, "spark-role": "executor", LABEL_GROUP: job.name,
                                LABEL_KIND: BATCH},
                     "annotations": {ANNOTATION_USAGE: json.dumps(usage),
                                     RUN_DURATION: f"{job.run_seconds:g}s"}},
        "spec": {"restartPolicy": "Never",
                 "containers": [{"name": "spark-kubernetes-executor", "image": "spark:3.5",
                                 "resources": {"requests": dict(res), "limits": dict(res)}}]},
    }


def plain_pod(name: str, namespace: str, group: str, kind: str, requests: Resources,
              run_seconds: float, priority_class_name: str = "") -> Obj:
    """A koord-scheduler pod with requests and nothing else Koordinator-specific."""
    res = {"cpu": requests.cpu, "memory": requests.memory}
    spec: Obj = {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never",
                 "containers": [{"name": "worker", "image": "registry.local/worker:v1",
                                 "resources": {"requests": dict(res), "limits": dict(res)}}]}
    if priority_class_name:
        spec["priorityClassName"] = priority_class_name
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {LABEL_GROUP: group, LABEL_KIND: kind},
                     "annotations": {RUN_DURATION: f"{run_seconds:g}s"}},
        "spec": spec,
    }


def quota_pod(job: QuotaJob, name: str) -> Obj:
    return plain_pod(name, job.namespace, job.name, QUOTA, job.requests, job.run_seconds,
                     job.priority_class_name)


def reservation(rollout: Rollout, index: int, day: float) -> Obj:
    """One replica's Reservation: the replica's requests on one node, for the pods labelled
    ``app: <name>`` in the rollout's namespace, used once, expiring two days later."""
    res = {"cpu": rollout.requests.cpu, "memory": rollout.requests.memory}
    return {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": f"{rollout.name}-{index}",
                     "labels": {LABEL_GROUP: rollout.name, LABEL_KIND: ROLLOUT}},
        "spec": {
            "template": {"metadata": {"namespace": rollout.namespace},
                         "spec": {"schedulerName": SCHEDULER_NAME,
                                  "priorityClassName": "koord-prod",
                                  "containers": [{"name": rollout.name, "resources": {
                                      "requests": dict(res), "limits": dict(res)}}]}},
            "owners": [{"labelSelector": {"matchLabels": {"app": rollout.name}}}],
            "allocateOnce": True,
            "ttl": f"{2 * day:g}s",
        },
    }


def pod_group(job: GangJob) -> Obj:
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": job.name, "namespace": job.namespace,
                         "labels": {LABEL_GROUP: job.name, LABEL_KIND: GANG}},
            "spec": {"minMember": job.required,
                     "scheduleTimeoutSeconds": job.schedule_timeout_seconds}}


def gang_pod(job: GangJob, index: int) -> Obj:
    res = {"cpu": job.requests.cpu, "memory": job.requests.memory}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{job.name}-worker-{index}", "namespace": job.namespace,
                     "labels": {LABEL_POD_GROUP: job.name, LABEL_GROUP: job.name,
                                LABEL_KIND: GANG, "training.local/role": "worker"},
                     "annotations": {RUN_DURATION: f"{job.run_seconds:g}s"}},
        "spec": {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never",
                 "containers": [{"name": "trainer", "image": "registry.local/trainer:v1",
                                 "resources": {"requests": dict(res), "limits": dict(res)}}]},
    }


def wave_times(job: BatchJob, day: float) -> list[float]:
    """Seconds into the day of each wave: evenly from firstWaveAtFraction to the day's end."""
    start = job.first_wave_at_fraction * day
    step = (day - start) / job.waves
    return [start + k * step for k in range(job.waves)]


class Workload:
    def __init__(self, client: Client, scenario: Scenario, epoch: float) -> None:
        self.client = client
        self.scenario = scenario
        self.epoch = epoch  # wall-clock start of the day
        day = scenario.day_length_seconds
        n = scenario.nodes.count
        self.slots: list[Slot] = []
        self._jobs = {j.name: j for j in scenario.batch}
        self._services = {s.name: s for s in scenario.online}
        self._quota_jobs = {j.name: j for j in scenario.quota_jobs}
        self._rollouts = {r.name: r for r in scenario.rollouts}
        # Deployment services, not created yet; then those whose pinning nodes wait to be
        # uncordoned once the service's pods are bound.
        self.deployments_due = [svc for svc in scenario.online if svc.deployment]
        self.pinned: list[OnlineService] = []
        for svc in scenario.online:
            if svc.deployment:
                continue  # its ReplicaSet makes and replaces its pods
            for i in range(svc.replica_count(n)):
                self.slots.append(Slot(ONLINE, svc.name, svc.namespace, f"{svc.name}-{i}", 0.0,
                                       retries_left=1 << 30))
        for job in scenario.batch:
            for w, at in enumerate(wave_times(job, day)):
                for i in range(job.pods_per_node_per_wave * n):
                    self.slots.append(Slot(BATCH, job.name, job.namespace,
                                           f"{job.name}-w{w}-{i}", at, job.retries))
        for qjob in scenario.quota_jobs:
            for i in range(qjob.pods):
                self.slots.append(Slot(QUOTA, qjob.name, qjob.namespace, f"{qjob.name}-{i}",
                                       qjob.submit_at_fraction * day, qjob.retries))
        for r in scenario.rollouts:
            for i in range(r.replicas):
                self.slots.append(Slot(ROLLOUT, r.name, r.namespace, f"{r.name}-{i}",
                                       r.rollout_at_fraction * day, retries_left=1 << 30))
            if r.backfill is not None:
                for i in range(r.backfill.pods):
                    self.slots.append(Slot(BACKFILL, r.name, r.namespace,
                                           f"{r.name}-backfill-{i}",
                                           r.backfill.submit_at_fraction * day, retries_left=0))
        # Rollouts whose Reservations are not created yet, with their time.
        self.reservations_due = [(r.reserve_at_fraction * day, r) for r in scenario.rollouts]
        # Gang jobs not submitted yet, with their submit time.
        self.gangs_due = [(g.submit_at_fraction * day, g) for g in scenario.gangs]
        self.replaced = 0
        self.created = 0  # pods created, replacements included
        self._pool = ThreadPoolExecutor(CREATE_WORKERS, thread_name_prefix="create-pod")
        self._lock = threading.Lock()

    def _create(self, slot: Slot) -> None:
        name = slot.pod_name()
        if slot.kind == ONLINE:
            pod = online_pod(self._services[slot.group], name,
                             self.scenario.day_length_seconds, self.epoch)
        elif slot.kind == QUOTA:
            pod = quota_pod(self._quota_jobs[slot.group], name)
        elif slot.kind == ROLLOUT:
            pod = online_pod(self._rollouts[slot.group].service(), name,
                             self.scenario.day_length_seconds, self.epoch, kind=ROLLOUT)
        elif slot.kind == BACKFILL:
            backfill = self._rollouts[slot.group].backfill
            assert backfill is not None
            pod = plain_pod(name, slot.namespace, f"{slot.group}-backfill", BACKFILL,
                            backfill.requests, backfill.run_seconds)
        else:
            pod = batch_pod(self._jobs[slot.group], name)
        try:
            self.client.create(PODS, pod, slot.namespace)
        except ApiError as e:
            if e.status != 409:  # AlreadyExists: created by an earlier try
                log.warning("creating pod %s/%s failed (retried next tick): %s",
                            slot.namespace, name, e)
                return
        slot.current = name
        with self._lock:  # creates run on the pool's threads
            self.created += 1

    def _create_gang(self, job: GangJob) -> bool:
        """The PodGroup first (its pods wait for it otherwise), then every worker; False when
        a create failed (the rest is tried again next tick)."""
        objects = [(POD_GROUPS, pod_group(job))] + [(PODS, gang_pod(job, i))
                                                    for i in range(job.workers)]
        for resource, obj in objects:
            try:
                self.client.create(resource, obj, job.namespace)
            except ApiError as e:
                if e.status != 409:
                    log.warning("creating %s %s/%s failed (retried next tick): %s",
                                obj["kind"], job.namespace, obj["metadata"]["name"], e)
                    return False
                continue  # created by an earlier try
            if resource is PODS:
                with self._lock:
                    self.created += 1
        return True

    def _create_reservations(self, rollout: Rollout) -> bool:
        """Every Reservation of the rollout; False when a create failed (retried next tick)."""
        for i in range(rollout.replicas):
            obj = reservation(rollout, i, self.scenario.day_length_seconds)
            try:
                self.client.create(RESERVATIONS, obj)
            except ApiError as e:
                if e.status != 409:
                    log.warning("creating Reservation %s failed (retried next tick): %s",
                                obj["metadata"]["name"], e)
                    return False
        return True

    def _cordon(self, keep: list[str], unschedulable: bool) -> None:
        """Cordon (or uncordon) every node but ``keep``."""
        for node in self.client.list(NODES)["items"]:
            name = node["metadata"]["name"]
            if name not in keep and bool((node.get("spec") or {}).get("unschedulable")) \
                    != unschedulable:
                self.client.patch(NODES, name, {"spec": {"unschedulable": unschedulable}})

    def _create_deployment(self, svc: OnlineService) -> bool:
        """The service's PodDisruptionBudget and Deployment, its other nodes cordoned first
        when it is pinned; False when a create failed (the rest is tried again next tick)."""
        if svc.place_on:
            self._cordon(svc.place_on, True)
        objects = [(DEPLOYMENTS, deployment(svc, self.scenario.nodes.count,
                                            self.scenario.day_length_seconds, self.epoch))]
        if svc.min_available is not None:
            objects.insert(0, (POD_DISRUPTION_BUDGETS, pod_disruption_budget(svc)))
        for resource, obj in objects:
            try:
                self.client.create(resource, obj, svc.namespace)
            except ApiError as e:
                if e.status != 409:
                    log.warning("creating %s %s/%s failed (retried next tick): %s", obj["kind"],
                                svc.namespace, svc.name, e)
                    return False
        if svc.place_on:
            self.pinned.append(svc)
        return True

    def _unpin(self, svc: OnlineService, pods: dict[tuple[str, str], Obj]) -> bool:
        """Uncordon the nodes a pinned service kept to itself once all its pods are bound;
        False while they are not."""
        bound = sum(1 for (ns, _), p in pods.items() if ns == svc.namespace
                    and (p["metadata"].get("labels") or {}).get(LABEL_GROUP) == svc.name
                    and (p.get("spec") or {}).get("nodeName"))
        if bound < svc.replica_count(self.scenario.nodes.count):
            return False
        self._cordon(svc.place_on, False)
        return True

    def step(self, t: float, pods: dict[tuple[str, str], Obj]) -> None:
        """Advance to ``t`` seconds into the day, given the current pods by (ns, name)."""
        self.deployments_due = [svc for svc in self.deployments_due
                                if not self._create_deployment(svc)]
        self.pinned = [svc for svc in self.pinned if not self._unpin(svc, pods)]
        # Reservations first: a rollout's backfill or pods due at the same tick come after.
        self.reservations_due = [(at, r) for at, r in self.reservations_due
                                 if t < at or not self._create_reservations(r)]
        due: list[Slot] = []
        for slot in self.slots:
            if slot.outcome or t < slot.submit_at:
                continue
            if slot.current is None:
                due.append(slot)
                continue
            pod = pods.get((slot.namespace, slot.current))
            phase = ((pod or {}).get("status") or {}).get("phase")
            if phase == "Succeeded":
                slot.outcome = "Succeeded"
            elif pod is None or phase == "Failed":
                # Evicted (deleted) or refused by the kubelet: a Job would start another pod.
                if slot.retries_left <= 0:
                    slot.outcome = "Failed"
                    continue
                slot.retries_left -= 1
                slot.attempt += 1
                slot.current = None
                self.replaced += 1
                due.append(slot)
        # Each create waits on the manager's webhook: a wave goes out several at a time.
        list(self._pool.map(self._create, due))
        self.gangs_due = [(at, job) for at, job in self.gangs_due
                          if t < at or not self._create_gang(job)]

    def close(self) -> None:
        self._pool.shutdown(wait=True)
