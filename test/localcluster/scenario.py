"""Co-location scenarios of the local cluster: YAML files (``scenarios/*.yaml``) loaded into
typed models (no upstream counterpart; upstream demos this with a real cluster by hand).

A scenario is one simulated day, sped up to ``dayLengthSeconds``: online services whose usage
follows a diurnal curve (low at the start of the day, peak at ``peakAtFraction`` of it) and
batch jobs that arrive in waves through the day. Counts are per node, so ``--nodes`` scales
the whole workload, except gang jobs (``gangs``): training jobs of a fixed number of workers,
each a PodGroup that koord-scheduler's Coscheduling binds all together or not at all, and
quota jobs (``quotaJobs``): a team's pods charged to one of the scenario's ElasticQuotas
(``quotas``, created before the workload), submitted at once at their time, and service
rollouts reserved ahead (``rollouts``): koord-scheduler Reservations for a service's pods,
then a backfill job of plain pods that wants more than is free, then the service's pods.
``sloControllerConfig`` is merged key by key onto the chart's
``slo-controller-config`` ConfigMap (each key's JSON object onto the chart's), so a sped-up day
gets NodeMetric windows that fit it. ``chartValues`` are Helm values given to the chart on top
of its own (``helm install -f``), e.g. ``scheduler.pluginArgs`` for koord-scheduler's plugins
or ``descheduler.pluginArgs`` for koord-descheduler's (LowNodeLoad runs in every scenario).
An online service may run as a Deployment with a PodDisruptionBudget, pinned to some nodes at
first (``OnlineService``): koord-descheduler may then migrate its pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from api.core import quantity_value

SCENARIO_DIR = Path(__file__).parent / "scenarios"
DEFAULT_SCENARIO = SCENARIO_DIR / "default.yaml"


class ScenarioError(ValueError):
    """A scenario file that cannot be loaded; the message names the file and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def _number_to_str(value: Any) -> Any:
    # YAML reads `cpu: 2` as a number; Kubernetes quantities are strings.
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _check_quantity(value: str) -> str:
    try:
        quantity_value(value)
    except (ValueError, ArithmeticError):
        raise ValueError(f"{value!r} is not a quantity") from None
    return value


Quantity = Annotated[str, BeforeValidator(_number_to_str), AfterValidator(_check_quantity)]


class Resources(_Model):
    cpu: Quantity
    memory: Quantity


class CurveSpec(_Model):
    """Usage over the day: ``base`` at night, ``peak`` at ``peakAtFraction`` of the day."""

    base: Quantity
    peak: Quantity
    peak_at_fraction: float = Field(0.5, alias="peakAtFraction", ge=0, le=1)

    def annotation(self, day_seconds: float, epoch: float) -> dict[str, Any]:
        """The ``sim.koordinator.sh/usage`` value for one resource (koordlet's simulated
        collector: base + (peak − base)·(1 + cos(2π(t − epoch − peakAt)/period))/2)."""
        return {"base": self.base, "peak": self.peak, "periodSeconds": day_seconds,
                "peakAtSeconds": self.peak_at_fraction * day_seconds, "epoch": epoch}


class NodePool(_Model):
    count: int = Field(5, ge=1)
    cpu: Quantity = "16"
    memory: Quantity = "64Gi"
    pods: int = Field(110, ge=1)
    system_usage: Resources = Field(Resources(cpu="500m", memory="2Gi"), alias="systemUsage")


class OnlineService(_Model):
    """A latency-sensitive service: koord-prod, QoS LS, its replicas spread by the scheduler.

    As a ``deployment`` it is a Deployment of ``replicas`` (its ReplicaSet replaces an evicted
    pod, so koord-descheduler may migrate them) with, given ``minAvailable``, a
    PodDisruptionBudget; ``placeOn`` names the nodes its pods start on: every other node is
    cordoned until they are all bound, then uncordoned (as an operator would pin a rollout)."""

    name: str
    namespace: str = "online"
    replicas_per_node: int = Field(0, alias="replicasPerNode", ge=0)
    requests: Resources
    cpu_usage: CurveSpec = Field(alias="cpuUsage")
    memory_usage: CurveSpec = Field(alias="memoryUsage")
    deployment: bool = False
    replicas: int | None = Field(None, ge=1)
    min_available: int | None = Field(None, alias="minAvailable", ge=0)
    place_on: list[str] = Field(default_factory=list, alias="placeOn")

    @model_validator(mode="after")
    def _deployment_keys(self) -> OnlineService:
        only = [k for k, v in (("replicas", self.replicas is not None),
                               ("minAvailable", self.min_available is not None),
                               ("placeOn", bool(self.place_on))) if v]
        if only and not self.deployment:
            raise ValueError(f"{', '.join(only)}: only for a service with deployment: true")
        if self.replicas is not None and self.min_available is not None \
                and self.min_available > self.replicas:
            raise ValueError(f"minAvailable {self.min_available} is more than replicas "
                             f"{self.replicas}")
        return self

    def replica_count(self, nodes: int) -> int:
        """Its pods for ``nodes`` nodes: ``replicas`` if given, else per node."""
        return self.replicas if self.replicas is not None else self.replicas_per_node * nodes


class BatchJob(_Model):
    """Batch pods in waves; the ClusterColocationProfile turns them into BE / koord-batch pods
    requesting kubernetes.io/batch-cpu and batch-memory."""

    name: str
    namespace: str = "spark-demo"
    labels: dict[str, str] = Field(
        default_factory=lambda: {"sparkoperator.k8s.io/launched-by-spark-operator": "true"})
    waves: int = Field(ge=1)
    pods_per_node_per_wave: int = Field(alias="podsPerNodePerWave", ge=0)
    first_wave_at_fraction: float = Field(0.0, alias="firstWaveAtFraction", ge=0, lt=1)
    requests: Resources
    usage: Resources
    run_seconds: float = Field(alias="runSeconds", gt=0)
    retries: int = Field(3, ge=0, description="replacements of a pod that fails or is evicted")


class GangJob(_Model):
    """A training job: ``workers`` pods of one PodGroup (``minMember`` of them, all by default,
    must fit at once), submitted at ``submitAtFraction`` of the day, each running
    ``runSeconds``."""

    name: str
    namespace: str = "training"
    workers: int = Field(ge=1)
    min_member: int | None = Field(None, alias="minMember", ge=1)
    submit_at_fraction: float = Field(0.0, alias="submitAtFraction", ge=0, lt=1)
    schedule_timeout_seconds: int = Field(30, alias="scheduleTimeoutSeconds", ge=1)
    requests: Resources
    run_seconds: float = Field(alias="runSeconds", gt=0)

    @property
    def required(self) -> int:
        return self.min_member if self.min_member is not None else self.workers

    @model_validator(mode="after")
    def _min_member_within_workers(self) -> GangJob:
        if self.required > self.workers:
            raise ValueError(f"minMember {self.required} is more than workers {self.workers}")
        return self


class Quota(_Model):
    """An ElasticQuota (``scheduling.sigs.k8s.io/v1alpha1``) in ``namespace`` (by default its
    name: pods of the namespace named like the quota are charged to it, upstream's rule)."""

    name: str
    namespace: str = ""
    parent: str = ""  # the quota.scheduling.koordinator.sh/parent label; empty: the root
    is_parent: bool = Field(False, alias="isParent")
    min: Resources
    max: Resources

    @property
    def in_namespace(self) -> str:
        return self.namespace or self.name


class QuotaJob(_Model):
    """A team's job: ``pods`` pods in ``namespace`` (so charged to the quota of that name),
    created at ``submitAtFraction`` of the day, each running ``runSeconds``; like a Job, a
    pod that is revoked, preempted or fails is replaced (``retries`` times)."""

    name: str
    namespace: str
    pods: int = Field(ge=1)
    submit_at_fraction: float = Field(0.0, alias="submitAtFraction", ge=0, lt=1)
    priority_class_name: str = Field("", alias="priorityClassName")
    requests: Resources
    run_seconds: float = Field(alias="runSeconds", gt=0)
    retries: int = Field(3, ge=0)


class Backfill(_Model):
    """Plain koord-scheduler pods (default priority, no QoS label) asking for real cores, all
    submitted at ``submitAtFraction``; more than the cluster has free, so some wait."""

    pods: int = Field(ge=1)
    submit_at_fraction: float = Field(alias="submitAtFraction", ge=0, lt=1)
    requests: Resources
    run_seconds: float = Field(alias="runSeconds", gt=0)


class Rollout(_Model):
    """A service rollout reserved ahead with koord-scheduler's Reservation: at
    ``reserveAtFraction`` one Reservation per replica (owners: pods labelled ``app: <name>``,
    allocate-once, ``ttl`` two days) holds ``requests`` on a node; the ``backfill`` pods come
    next and cannot use that capacity; at ``rolloutAtFraction`` the service's pods arrive
    (koord-prod, LS, usage on a diurnal curve like ``online`` services) and each lands in a
    Reservation."""

    name: str
    namespace: str = "online"
    replicas: int = Field(ge=1)
    requests: Resources
    cpu_usage: CurveSpec = Field(alias="cpuUsage")
    memory_usage: CurveSpec = Field(alias="memoryUsage")
    reserve_at_fraction: float = Field(0.0, alias="reserveAtFraction", ge=0, lt=1)
    rollout_at_fraction: float = Field(alias="rolloutAtFraction", gt=0, lt=1)
    backfill: Backfill | None = None

    @model_validator(mode="after")
    def _reserved_before_rollout(self) -> Rollout:
        if self.rollout_at_fraction <= self.reserve_at_fraction:
            raise ValueError(f"rolloutAtFraction {self.rollout_at_fraction} must come after "
                             f"reserveAtFraction {self.reserve_at_fraction}")
        return self

    def service(self) -> OnlineService:
        """The service whose pods the rollout brings."""
        return OnlineService(name=self.name, namespace=self.namespace, requests=self.requests,
                             cpu_usage=self.cpu_usage, memory_usage=self.memory_usage)


class Scenario(_Model):
    name: str
    description: str = ""
    day_length_seconds: float = Field(180, alias="dayLengthSeconds", gt=0)
    sample_interval_seconds: float = Field(5, alias="sampleIntervalSeconds", gt=0)
    nodes: NodePool = Field(default_factory=NodePool)
    slo_controller_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="sloControllerConfig")
    koordlet_args: list[str] = Field(default_factory=list, alias="koordletArgs")
    online: list[OnlineService] = Field(default_factory=list)
    batch: list[BatchJob] = Field(default_factory=list)
    gangs: list[GangJob] = Field(default_factory=list)
    chart_values: dict[str, Any] = Field(default_factory=dict, alias="chartValues")
    quotas: list[Quota] = Field(default_factory=list)
    quota_jobs: list[QuotaJob] = Field(default_factory=list, alias="quotaJobs")
    rollouts: list[Rollout] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references_resolve(self) -> Scenario:
        parents = {q.name for q in self.quotas if q.is_parent}
        for q in self.quotas:
            if q.parent and q.parent not in parents:
                raise ValueError(f"quota {q.name}: parent {q.parent!r} is no quota here with "
                                 f"isParent: true")
        names = {f"node-{i}" for i in range(self.nodes.count)}
        for svc in self.online:
            if unknown := [node for node in svc.place_on if node not in names]:
                raise ValueError(f"online service {svc.name}: placeOn {unknown} are no nodes "
                                 f"here (node-0..node-{self.nodes.count - 1})")
        by_namespace = {q.in_namespace for q in self.quotas if q.name == q.in_namespace}
        for job in self.quota_jobs:
            if job.namespace not in by_namespace:
                raise ValueError(f"quota job {job.name}: no quota named like its namespace "
                                 f"{job.namespace!r} (its pods would go to the default quota)")
        return self

    def pod_count(self) -> int:
        """Pods submitted (first attempts) for this scenario's node count."""
        n = self.nodes.count
        return (sum(s.replica_count(n) for s in self.online)
                + sum(j.waves * j.pods_per_node_per_wave for j in self.batch) * n
                + sum(g.workers for g in self.gangs) + sum(j.pods for j in self.quota_jobs)
                + sum(r.replicas + (r.backfill.pods if r.backfill else 0)
                      for r in self.rollouts))


def scenario_path(name: str, base: Path) -> Path:
    """``name`` as a file under ``base``, or else, when ``scenarios/<name>.yaml`` exists, that
    (``--scenario hotspot``)."""
    path = base / name
    builtin = SCENARIO_DIR / f"{name}.yaml"
    return builtin if not path.exists() and builtin.exists() else path


def load(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ScenarioError(f"scenario {path}: {e}") from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"scenario {path}: want a YAML mapping")
    try:
        return Scenario.model_validate(doc)
    except ValidationError as e:
        fields = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
                           for err in e.errors())
        raise ScenarioError(f"scenario {path}: {fields}") from None
