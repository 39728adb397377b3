"""The MigrationController against the embedded API server, time on a fake clock, reconciles
driven one by one: upstream controller_test.go's cases (timeout, invalid pod ref, missing pod,
evict directly, the ReservationFirst flow from Reservation creation to the bound pod being
Ready, an unschedulable, expired, missing or same-node Reservation, a pending pod scheduled
into its Reservation, a Reservation bound by another pod), Evict creating the job, the job
informer's events, the object limiter, jobs of another instance, the scavenger, and the plugin
built through the registry from the descheduler's services.

The filter, object limiter and arbitrator are fakes here (they are the other half of the
package, tested on their own)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from descheduler.apis.config.args import MigrationControllerArgs
from descheduler.controllers.migration.arbitrator.arbitrator import Arbitrator
from descheduler.controllers.migration.controller import REQUEUE_AFTER, MigrationController
from descheduler.controllers.migration.evictor import EvictorInterpreter, TooManyEvictionsError
from descheduler.controllers.migration.testing import (
    NODE,
    NS,
    FakeRecorder,
    create_job,
    create_pod,
    namespace,
)
from descheduler.controllers.migration.util import (
    ANNOTATION_EVICT,
    ANNOTATION_JOB_CREATED_BY,
    LABEL_EVICT_POLICY,
)
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.types import (
    EvictOptions,
    EvictPlugin,
    FilterPlugin,
    Handle,
    Services,
)
from pkg.client.errors import ApiError, is_not_found
from pkg.client.informers import SharedInformerFactory
from pkg.client.resources import NAMESPACES, NODES, POD_MIGRATION_JOBS, PODS, RESERVATIONS, Resource
from pkg.client.rest import Client
from pkg.controller.controller import Result
from pkg.events.recorder import EventBroadcaster
from pkg.util.clock import FakeClock
from test.apiserver import start
from test.e2e.cluster import install_crds, wait_for

OTHER_NODE = "node-b"


@dataclass
class FakeFilter:
    """Lets every pod through unless ``allow`` is False."""

    allow: bool = True

    def filter(self, pod: Any) -> bool:
        return self.allow

    def pre_eviction_filter(self, pod: Any) -> bool:
        return self.allow


@dataclass
class FakeLimiter:
    """Limits every pod while ``limit`` is set; remembers the pods tracked."""

    limit: bool = False
    tracked: list[str] = field(default_factory=list)

    def limited(self, pod: Any) -> bool:
        return self.limit

    def track(self, pod: Any) -> None:
        self.tracked.append(pod["metadata"]["name"])


@dataclass
class FakeArbitrator:
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def add(self, job: Any) -> None:
        self.added.append(job["metadata"]["name"])

    def delete(self, job: Any) -> None:
        self.deleted.append(job["metadata"]["name"])

    def run(self, stop: Any) -> None:
        stop.wait()


@dataclass
class Env:
    client: Client
    clock: FakeClock
    filter: FakeFilter
    limiter: FakeLimiter
    arbitrator: FakeArbitrator
    recorder: FakeRecorder
    ctl: MigrationController

    def job(self, name: str) -> dict[str, Any]:
        return self.client.get(POD_MIGRATION_JOBS, name)

    def status(self, name: str) -> dict[str, Any]:
        return self.job(name).get("status") or {}

    def condition(self, name: str, condition_type: str) -> dict[str, Any] | None:
        return next((c for c in self.status(name).get("conditions") or []
                     if c["type"] == condition_type), None)

    def exists(self, resource: Resource, name: str, namespace: str | None = None) -> bool:
        try:
            self.client.get(resource, name, namespace)
        except Exception as err:  # noqa: BLE001 - only NotFound is expected
            if is_not_found(err):
                return False
            raise
        return True

    def reconcile(self, name: str) -> Result | None:
        return self.ctl.reconcile(name)


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with start() as srv:
        c = Client.from_kubeconfig(srv.kubeconfig, qps=-1)
        install_crds(c)
        c.create(NAMESPACES, namespace())
        yield c
        c.close()


def make_env(client: Client, **args: Any) -> Env:
    # The fake clock starts at the server's time: jobs are created "now".
    clock = FakeClock(start=time.time())
    migration_args = MigrationControllerArgs.model_validate(args)
    recorder = FakeRecorder()
    evictor = EvictorInterpreter.new(client, migration_args.eviction_policy,
                                     migration_args.evict_qps_value() or 10.0,
                                     migration_args.evict_burst, recorder, clock)
    migration_filter, limiter, arbitrator = FakeFilter(), FakeLimiter(), FakeArbitrator()
    ctl = MigrationController(migration_args, client, migration_filter=migration_filter,
                              limiter=limiter, arbitrator=arbitrator, evictor=evictor,
                              recorder=recorder, clock=clock, instance_id="this-instance")
    return Env(client, clock, migration_filter, limiter, arbitrator, recorder, ctl)


@pytest.fixture
def env(client: Client) -> Iterator[Env]:
    yield make_env(client)
    for resource, ns in ((POD_MIGRATION_JOBS, None), (RESERVATIONS, None), (PODS, NS)):
        for obj in client.list(resource, ns)["items"]:
            client.delete(resource, obj["metadata"]["name"], ns, grace_period_seconds=0)


def set_reservation_status(client: Client, name: str, status: dict[str, Any]) -> None:
    r = client.get(RESERVATIONS, name)
    r["status"] = status
    client.update_status(RESERVATIONS, r)


def scheduled(node: str, phase: str = "Available") -> dict[str, Any]:
    return {"phase": phase, "nodeName": node, "conditions": [
        {"type": "Scheduled", "status": "True", "reason": "Scheduled"},
        {"type": "Ready", "status": "True", "reason": "Available"}]}


def reservation_of(env: Env, job: str) -> str:
    ref = env.job(job)["spec"]["reservationOptions"]["reservationRef"]
    return str(ref["name"])


# -- Evict ------------------------------------------------------------------------------------


def test_evict_creates_a_job_with_upstream_metadata_and_spec(env: Env) -> None:
    pod = create_pod(env.client, "web-1")
    assert env.ctl.evict(pod, EvictOptions(plugin_name="LowNodeLoad", reason="hot node"))
    [job] = env.client.list(POD_MIGRATION_JOBS)["items"]
    assert job["metadata"]["annotations"] == {
        "koordinator.sh/evict-reason": "hot node", "koordinator.sh/evict-trigger": "LowNodeLoad",
        ANNOTATION_JOB_CREATED_BY: "this-instance"}
    assert job["spec"] == {"podRef": {"namespace": NS, "name": "web-1",
                                      "uid": pod["metadata"]["uid"]},
                           "mode": "ReservationFirst", "ttl": "5m0s"}
    # Creating a job does not reconcile it: the arbitrator gets it first.
    env.ctl.on_add(job, False)
    assert env.arbitrator.added == [job["metadata"]["name"]]
    assert len(env.ctl.controller.queue) == 0


def test_evict_refused_by_the_filter_or_limiter_creates_nothing(env: Env) -> None:
    pod = create_pod(env.client, "web-1")
    env.filter.allow = False
    assert not env.ctl.evict(pod, EvictOptions("LowNodeLoad", "hot"))
    env.filter.allow, env.limiter.limit = True, True
    assert not env.ctl.evict(pod, EvictOptions("LowNodeLoad", "hot"))
    assert env.client.list(POD_MIGRATION_JOBS)["items"] == []


def test_evict_in_dry_run_says_yes_and_creates_nothing(
        client: Client) -> None:
    env = make_env(client, dryRun=True, defaultJobMode="EvictDirectly")
    pod = create_pod(client, "web-dry")
    env.filter.allow = False
    assert env.ctl.evict(pod, EvictOptions("LowNodeLoad", "hot"))
    assert client.list(POD_MIGRATION_JOBS)["items"] == []
    client.delete(PODS, "web-dry", NS)


def test_evict_uses_the_default_delete_options(client: Client) -> None:
    env = make_env(client, defaultDeleteOptions={"gracePeriodSeconds": 5},
                   defaultJobMode="EvictDirectly", defaultJobTTL="0s")
    job = env.ctl.new_job(create_pod(client, "web-opts"), EvictOptions("LowNodeLoad", "hot"))
    assert job["spec"]["deleteOptions"] == {"gracePeriodSeconds": 5}
    assert (job["spec"]["mode"], job["spec"]["ttl"]) == ("EvictDirectly", "0s")
    client.delete(PODS, "web-opts", NS)


# -- aborts -----------------------------------------------------------------------------------


def test_abort_job_if_timeout_and_delete_its_reservation(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", ttl="30m0s")
    assert env.reconcile("job") is None  # Running, the Reservation created
    reservation = reservation_of(env, "job")
    assert env.exists(RESERVATIONS, reservation)

    env.clock.step(29 * 60)
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.status("job")["phase"] == "Running"

    env.clock.step(60)
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "Timeout", "Abort job caused by timeout")
    assert not env.exists(RESERVATIONS, reservation)
    assert ("PodMigrationJob", "Warning", "Timeout",
            "Abort job caused by timeout") in env.recorder.events


def test_no_ttl_never_times_out(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", ttl=None, mode="EvictDirectly")
    env.limiter.limit = True
    env.clock.step(24 * 3600)
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.status("job")["phase"] == "Running"


def test_abort_job_with_an_invalid_pod_ref(env: Env) -> None:
    env.client.create(POD_MIGRATION_JOBS, {
        "apiVersion": POD_MIGRATION_JOBS.api_version, "kind": "PodMigrationJob",
        "metadata": {"name": "job"}, "spec": {"podRef": {"namespace": NS}}})
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "InvalidPodRef", "Abort job caused by invalid PodRef")


def test_abort_job_by_missing_pod(env: Env) -> None:
    create_job(env.client, "job", "ghost")
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "MissingPod", f'Abort job caused by missing Pod "{NS}/ghost"')
    # Terminal: nothing more happens.
    before = env.job("job")
    assert env.reconcile("job") is None
    assert env.job("job") == before


def test_paused_and_terminal_jobs_are_left_alone(env: Env) -> None:
    create_pod(env.client, "web-1")
    job = create_job(env.client, "paused", "web-1")
    job["spec"]["paused"] = True
    env.client.update(POD_MIGRATION_JOBS, job)
    create_job(env.client, "aborted", "web-1")
    aborted = env.job("aborted")
    aborted["status"] = {"phase": "Aborted"}
    env.client.update_status(POD_MIGRATION_JOBS, aborted)
    for name in ("paused", "aborted"):
        before = env.job(name)
        assert env.reconcile(name) is None
        assert env.job(name) == before


def test_jobs_of_another_instance_are_skipped(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "theirs", "web-1",
               annotations={ANNOTATION_JOB_CREATED_BY: "previous-instance"})
    create_job(env.client, "ours", "web-1",
               annotations={ANNOTATION_JOB_CREATED_BY: "this-instance"})
    create_job(env.client, "users", "web-1")
    assert env.reconcile("theirs") is None
    assert "status" not in env.job("theirs")
    for name in ("ours", "users"):
        env.reconcile(name)
        assert env.status(name)["phase"] == "Running"


# -- EvictDirectly ----------------------------------------------------------------------------


def test_evict_pod_directly(env: Env) -> None:
    pod = create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", mode="EvictDirectly")
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    job = env.job("job")
    assert job["spec"]["podRef"]["uid"] == pod["metadata"]["uid"]
    assert not env.exists(PODS, "web-1", NS)
    status = job["status"]
    message = (f'Pod "{NS}/web-1" evicted from node "{NODE}" by the reason '
               '"node is overutilized"')
    assert (status["phase"], status["status"], status["reason"], status["message"]) == (
        "Running", "Eviction", "Evicting", message)
    assert env.limiter.tracked == ["web-1"]
    assert ("Pod", "Normal", "Descheduled",
            f'Pod evicted from node "{NODE}" by the reason "node is overutilized"'
            ) in env.recorder.events

    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["status"], status.get("reason"), status["message"]) == (
        "Succeeded", "Complete", None, f'Pod "{NS}/web-1" has been evicted')
    eviction = env.condition("job", "Eviction")
    assert eviction is not None
    assert (eviction["status"], eviction["reason"]) == ("True", "EvictComplete")


def test_a_new_pod_of_the_same_name_counts_as_evicted(env: Env) -> None:
    # Soft eviction leaves the pod to someone else, who replaces it by one of the same name.
    create_pod(env.client, "web-1", labels={"app": "web", LABEL_EVICT_POLICY: "SoftEviction"})
    create_job(env.client, "job", "web-1", mode="EvictDirectly")
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.status("job")["reason"] == "Evicting"
    # Still there: wait.
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    env.client.delete(PODS, "web-1", NS)
    create_pod(env.client, "web-1")
    assert env.reconcile("job") is None
    assert env.status("job")["phase"] == "Succeeded"
    assert env.exists(PODS, "web-1", NS)


@pytest.mark.parametrize("allow", [True, False])
def test_filters_delegate_to_the_migration_filter(env: Env, allow: bool) -> None:
    env.filter.allow = allow
    pod = {"metadata": {"name": "p", "namespace": NS}}
    assert env.ctl.filter(pod) is allow
    assert env.ctl.pre_eviction_filter(pod) is allow


def test_default_mode_applies_to_jobs_without_one(client: Client) -> None:
    env = make_env(client, defaultJobMode="EvictDirectly")
    create_pod(client, "web-default")
    job = create_job(client, "job-default", "web-default")
    job["spec"].pop("mode")
    client.update(POD_MIGRATION_JOBS, job)
    assert env.reconcile("job-default") == Result(requeue_after=REQUEUE_AFTER)
    assert not env.exists(PODS, "web-default", NS)
    client.delete(POD_MIGRATION_JOBS, "job-default")


def test_object_limiter_holds_the_eviction(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", mode="EvictDirectly")
    env.limiter.limit = True
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.exists(PODS, "web-1", NS)
    assert env.status("job")["phase"] == "Running"
    env.limiter.limit = False
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert not env.exists(PODS, "web-1", NS)


def test_evict_annotation_skips_the_object_limiter(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", mode="EvictDirectly",
               annotations={ANNOTATION_EVICT: "true"})
    env.limiter.limit = True
    env.reconcile("job")
    assert not env.exists(PODS, "web-1", NS)


def test_pod_gone_before_eviction_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", mode="EvictDirectly")
    env.limiter.limit = True
    env.reconcile("job")  # Running, held by the limiter
    env.client.delete(PODS, "web-1", NS)
    env.limiter.limit = False
    assert env.reconcile("job") is None
    assert (env.status("job")["phase"], env.status("job")["reason"]) == ("Failed", "MissingPod")


def test_eviction_rate_limit_is_an_error_and_retried(client: Client
                                                     ) -> None:
    env = make_env(client, evictQPS=1, evictBurst=1)
    for i in (1, 2):
        create_pod(client, f"rl-{i}")
        create_job(client, f"rl-job-{i}", f"rl-{i}", mode="EvictDirectly")
    env.reconcile("rl-job-1")
    with pytest.raises(TooManyEvictionsError):
        env.reconcile("rl-job-2")
    assert env.exists(PODS, "rl-2", NS)
    env.clock.step(1)
    assert env.reconcile("rl-job-2") == Result(requeue_after=REQUEUE_AFTER)
    assert not env.exists(PODS, "rl-2", NS)
    for i in (1, 2):
        client.delete(POD_MIGRATION_JOBS, f"rl-job-{i}")


# -- ReservationFirst -------------------------------------------------------------------------


def test_migrate_with_a_reservation_until_the_new_pod_is_ready(env: Env) -> None:
    pod = create_pod(env.client, "web-1")
    job = create_job(env.client, "job", "web-1")
    # Pending → Running, then the Reservation, in one go.
    assert env.reconcile("job") is None
    assert env.status("job")["phase"] == "Running"
    name = reservation_of(env, "job")
    assert name == job["metadata"]["uid"]
    ref = env.job("job")["spec"]["reservationOptions"]["reservationRef"]
    r = env.client.get(RESERVATIONS, name)
    assert ref == {"kind": "Reservation", "apiVersion": "v1alpha1", "name": name,
                   "uid": r["metadata"]["uid"]}
    assert r["spec"]["allocateOnce"] is True
    assert r["spec"]["ttl"] == "5m0s"
    assert r["spec"]["owners"] == [{"controller": {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "uid": "rs-uid",
        "controller": True, "namespace": NS}}]
    assert r["metadata"]["labels"]["app.kubernetes.io/created-by"] == "koord-descheduler"
    assert "nodeName" not in r["spec"]["template"]["spec"]
    assert r["spec"]["template"]["spec"]["affinity"] == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                              "values": [NODE]}]}]}}}

    # Not scheduled yet: wait.
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    created = env.condition("job", "ReservationCreated")
    assert created is not None and created["status"] == "True"
    assert env.exists(PODS, "web-1", NS)

    set_reservation_status(env.client, name, scheduled(OTHER_NODE))
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    status = env.status("job")
    assert status["nodeName"] == OTHER_NODE
    assert env.condition("job", "ReservationScheduled")["status"] == "True"  # type: ignore[index]
    assert not env.exists(PODS, "web-1", NS)
    assert (status["status"], status["reason"]) == ("Eviction", "Evicting")

    # Evicted; no pod bound the Reservation yet.
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    bound = env.condition("job", "PodBoundReservation")
    assert bound is not None
    assert (bound["status"], bound["reason"]) == ("False", "WaitForPodBindReservation")
    assert env.condition("job", "Eviction")["reason"] == "EvictComplete"  # type: ignore[index]

    new_pod = create_pod(env.client, "web-2", OTHER_NODE)
    owner = {"namespace": NS, "name": "web-2", "uid": new_pod["metadata"]["uid"]}
    set_reservation_status(env.client, name, {**scheduled(OTHER_NODE, "Succeeded"),
                                              "currentOwners": [owner]})
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.status("job")["podRef"] == owner
    ready = env.condition("job", "BoundPodReady")
    assert ready is not None
    assert (ready["status"], ready["reason"]) == ("False", "WaitForBoundPodReady")

    new_pod = env.client.get(PODS, "web-2", NS)
    new_pod["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    env.client.update_status(PODS, new_pod)
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["status"], status.get("reason"), status["message"]) == (
        "Succeeded", "Complete", None, f'Bind Pod "{NS}/web-2" in Reservation "{name}"')
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "ReservationCreated": "True", "ReservationScheduled": "True", "Eviction": "True",
        "PodBoundReservation": "True", "ReservationBound": "True", "BoundPodReady": "True"}
    assert pod["metadata"]["uid"] == env.job("job")["spec"]["podRef"]["uid"]


def test_unschedulable_reservation_is_reported_and_waits_until_ttl(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    name = reservation_of(env, "job")
    set_reservation_status(env.client, name, {"phase": "Pending", "conditions": [
        {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/2 nodes are available"}]})
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    cond = env.condition("job", "ReservationScheduled")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "Unschedulable", "0/2 nodes are available")
    assert env.status("job")["phase"] == "Running"
    written = env.job("job")["metadata"]["resourceVersion"]
    # Nothing changed: nothing is written.
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    assert env.job("job")["metadata"]["resourceVersion"] == written
    assert env.exists(PODS, "web-1", NS)


def test_reservation_failed_unscheduled_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    set_reservation_status(env.client, reservation_of(env, "job"), {
        "phase": "Failed", "conditions": [
            {"type": "Scheduled", "status": "False", "reason": "Unschedulable",
             "message": "no fit"}]})
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "Unschedulable", "no fit")


def test_expired_reservation_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    set_reservation_status(env.client, reservation_of(env, "job"), {
        "phase": "Failed", "nodeName": OTHER_NODE, "conditions": [
            {"type": "Scheduled", "status": "True", "reason": "Scheduled"},
            {"type": "Ready", "status": "False", "reason": "Expired"}]})
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "ReservationExpired", "Reservation expired")
    assert env.exists(PODS, "web-1", NS)


def test_reservation_on_the_pods_own_node_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    name = reservation_of(env, "job")
    set_reservation_status(env.client, name, scheduled(NODE))
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "ForbiddenMigratePod",
        f'Scheduler assignes the Reservation "{name}" on the same node as the Pod')
    assert env.exists(PODS, "web-1", NS)


def test_missing_reservation_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1",
               spec={"reservationOptions": {"reservationRef": {
                   "kind": "Reservation", "name": "gone", "uid": "x"}}})
    env.reconcile("job")  # Running
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "MissingReservation", 'Abort job caused by missing Reservation "/gone"')


def test_reservation_bound_by_another_pod_fails_the_job(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    set_reservation_status(env.client, reservation_of(env, "job"), {
        **scheduled(OTHER_NODE, "Succeeded"),
        "currentOwners": [{"namespace": NS, "name": "intruder", "uid": "other"}]})
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed", "ForbiddenMigratePod", "Reservation is already bound by another Pod")
    assert env.exists(PODS, "web-1", NS)


def test_existing_reservation_of_that_name_is_reused(env: Env) -> None:
    create_pod(env.client, "web-1")
    job = create_job(env.client, "job", "web-1")
    existing = env.client.create(RESERVATIONS, {
        "apiVersion": RESERVATIONS.api_version, "kind": "Reservation",
        "metadata": {"name": job["metadata"]["uid"]},
        "spec": {"template": {"spec": {"containers": []}}, "owners": [{"object": {
            "name": "x"}}]}})
    env.reconcile("job")  # Running, the Reservation created
    ref = env.job("job")["spec"]["reservationOptions"]["reservationRef"]
    assert ref["uid"] == existing["metadata"]["uid"]


def test_a_reservation_named_by_the_job_gets_an_order(env: Env) -> None:
    create_pod(env.client, "web-1")
    mine = env.client.create(RESERVATIONS, {
        "apiVersion": RESERVATIONS.api_version, "kind": "Reservation",
        "metadata": {"name": "mine"},
        "spec": {"template": {"spec": {"containers": []}}, "owners": [{"object": {
            "name": "x"}}]}})
    create_job(env.client, "job", "web-1", spec={"reservationOptions": {"reservationRef": {
        "kind": "Reservation", "name": "mine", "uid": mine["metadata"]["uid"]}}})
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)  # not scheduled yet
    labels = env.client.get(RESERVATIONS, "mine")["metadata"]["labels"]
    assert labels["scheduling.koordinator.sh/reservation-order"] == str(
        int(env.clock.now() * 1000))


def test_failed_reservation_creation_is_a_condition_and_retried(env: Env) -> None:
    create_pod(env.client, "web-1")
    job = create_job(env.client, "job", "web-1")
    job["spec"]["reservationOptions"] = {"template": {"metadata": {"name": "Not_A_Name"}}}
    env.client.update(POD_MIGRATION_JOBS, job)
    with pytest.raises(ApiError, match="Not_A_Name"):
        env.reconcile("job")
    assert env.status("job")["phase"] == "Running"
    cond = env.condition("job", "ReservationCreated")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "FailedCreateReservation")
    assert cond["message"].startswith("Failed to create Reservation caused by")


def test_pending_pod_is_scheduled_into_its_reservation(env: Env) -> None:
    create_pod(env.client, "web-1", node="", phase="Pending", conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "no room"}])
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    name = reservation_of(env, "job")
    r = env.client.get(RESERVATIONS, name)
    uid = env.job("job")["spec"]["podRef"]["uid"]
    assert r["spec"]["owners"] == [{"object": {"uid": uid, "kind": "Pod", "name": "web-1",
                                               "namespace": NS}}]
    set_reservation_status(env.client, name, scheduled(OTHER_NODE))
    assert env.reconcile("job") == Result(requeue_after=REQUEUE_AFTER)
    cond = env.condition("job", "PodScheduled")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False", "Unschedulable", "no room")

    pod = env.client.get(PODS, "web-1", NS)
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    env.client.update_status(PODS, pod)
    assert env.reconcile("job") is None
    status = env.status("job")
    assert (status["phase"], status["status"], status["message"]) == (
        "Succeeded", "Complete", f'Assign Pod "{NS}/web-1" to node ""')
    assert env.exists(PODS, "web-1", NS)  # never evicted


# -- informer events and the scavenger --------------------------------------------------------


def test_job_events_enqueue_updates_and_clean_up_deleted_jobs(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1")
    env.reconcile("job")  # Running, the Reservation created
    job = env.job("job")
    reservation = reservation_of(env, "job")

    env.ctl.on_update(job, job)
    assert len(env.ctl.controller.queue) == 1
    assert env.arbitrator.deleted == []
    failed = {**job, "status": {"phase": "Failed"}}
    env.ctl.on_update(job, failed)
    assert env.arbitrator.deleted == ["job"]

    env.ctl.on_delete(job)
    assert env.arbitrator.deleted == ["job", "job"]
    assert not env.exists(RESERVATIONS, reservation)


def test_scavenger_deletes_old_jobs_and_their_reservations(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "with-ttl", "web-1", ttl="5m0s")
    create_job(env.client, "without-ttl", "web-1", ttl=None)
    env.reconcile("with-ttl")
    reservation = reservation_of(env, "with-ttl")

    env.clock.step(10 * 60 - 1)
    env.ctl.scavenge()
    assert env.exists(POD_MIGRATION_JOBS, "with-ttl")
    env.clock.step(2)
    env.ctl.scavenge()
    assert not env.exists(POD_MIGRATION_JOBS, "with-ttl")
    assert not env.exists(RESERVATIONS, reservation)
    assert env.exists(POD_MIGRATION_JOBS, "without-ttl")
    env.clock.step(20 * 60)
    env.ctl.scavenge()
    assert not env.exists(POD_MIGRATION_JOBS, "without-ttl")


def test_started_controller_reconciles_enqueued_jobs(env: Env) -> None:
    create_pod(env.client, "web-1")
    create_job(env.client, "job", "web-1", mode="EvictDirectly")
    env.ctl.start()
    try:
        env.ctl.on_update(None, env.job("job"))
        wait_for(lambda: env.status("job").get("status") == "Eviction", 10,
                 what="the job's pod evicted by a worker")
        assert not env.exists(PODS, "web-1", NS)
    finally:
        env.ctl.stop()


# -- built by the framework -------------------------------------------------------------------


@dataclass
class _Handle:
    nodes: Any
    pods: Any
    services: Services


def test_registry_builds_the_plugin_from_the_descheduler_services(client: Client) -> None:
    factory = SharedInformerFactory(client)
    broadcaster = EventBroadcaster(client)
    clock = FakeClock(start=time.time())
    services = Services(client, factory, broadcaster.new_recorder("koord-descheduler"), clock)
    nodes = factory.informer_for(NODES, typed=False).lister
    pods = factory.informer_for(PODS, typed=False).lister
    args = MigrationControllerArgs.model_validate({"arbitrationArgs": {"interval": "2s"},
                                                   "maxConcurrentReconciles": 2})
    # new() reads only the nodes, the pods and the services of its handle.
    handle = cast(Handle, _Handle(nodes, pods, services))
    plugin = in_tree_registry()["MigrationController"](args, handle)
    # The plugin kinds a profile may place it as.
    assert isinstance(plugin, FilterPlugin)
    assert isinstance(plugin, EvictPlugin)
    assert isinstance(plugin, MigrationController)
    assert plugin.name() == "MigrationController"
    assert plugin.controller.workers == 2
    arbitrator = plugin.arbitrator
    assert isinstance(arbitrator, Arbitrator)
    assert arbitrator.interval == 2.0

    factory.start()
    try:
        assert factory.wait_for_cache_sync(10)
        create_pod(client, "web-new")
        job = create_job(client, "job-new", "web-new")
        # A new job goes to the arbitrator, not to the workers.
        wait_for(lambda: arbitrator.waiting() == ["job-new"], 10,
                 what="the job at the arbitrator")
        assert len(plugin.controller.queue) == 0
        job["metadata"]["annotations"]["descheduler.koordinator.sh/passed-arbitration"] = "true"
        client.update(POD_MIGRATION_JOBS, job)
        wait_for(lambda: len(plugin.controller.queue) == 1, 10, what="the update enqueued")
        client.delete(POD_MIGRATION_JOBS, "job-new")
        wait_for(lambda: arbitrator.waiting() == [], 10, what="the job deleted")
    finally:
        factory.shutdown()
        broadcaster.shutdown()
        client.delete(PODS, "web-new", NS)
