"""PodMigrationJob: a full object round-trips, including the singular
``preemptedPodsReservation`` and the typed (schemaless in the CRD) reservation template."""

from __future__ import annotations

from api.scheduling.v1alpha1.pod_migration_job import (
    PodMigrationJob,
    PodMigrationJobConditionType,
    PodMigrationJobSpec,
)

JOB = {
    "apiVersion": "scheduling.koordinator.sh/v1alpha1",
    "kind": "PodMigrationJob",
    "metadata": {"name": "migrate-web-0", "annotations": {"koordinator.sh/evict-reason": "hot"}},
    "spec": {
        "paused": False,
        "ttl": "5m0s",
        "mode": "ReservationFirst",
        "podRef": {"namespace": "default", "name": "web-0", "uid": "u1"},
        "reservationOptions": {
            "template": {"metadata": {"name": "rsv"},
                         "spec": {"template": {"spec": {"containers": []}},
                                  "owners": [{"object": {"name": "web-0"}}], "ttl": "1h"}},
            "preemptionOptions": {},
        },
        "deleteOptions": {"gracePeriodSeconds": 30, "propagationPolicy": "Background"},
    },
    "status": {
        "phase": "Running",
        "status": "ReservationCreated",
        "reason": "WaitForPodBindReservation",
        "nodeName": "node-1",
        "podRef": {"namespace": "default", "name": "web-1"},
        "conditions": [{"type": "ReservationCreated", "status": "True",
                        "lastTransitionTime": "2024-03-05T08:00:00Z"}],
        "preemptedPodsRef": [{"namespace": "default", "name": "batch-0"}],
        "preemptedPodsReservation": [{"namespace": "default", "name": "r-batch-0",
                                      "nodeName": "node-2", "phase": "Available",
                                      "preemptedPodRef": {"name": "batch-0"},
                                      "podsRef": [{"name": "batch-0-new"}]}],
    },
}


def test_job_round_trips() -> None:
    job = PodMigrationJob.model_validate(JOB)
    assert job.to_dict() == JOB
    options = job.spec.reservation_options
    assert options is not None and options.template is not None
    assert options.template.spec.owners[0].object is not None
    assert options.template.spec.ttl_effective == "1h"
    assert job.status is not None
    assert job.status.preempted_pods_reservations is not None
    assert job.status.preempted_pods_reservations[0].node_name == "node-2"


def test_condition_lookup() -> None:
    status = PodMigrationJob.model_validate(JOB).status
    assert status is not None
    found = status.condition(PodMigrationJobConditionType.RESERVATION_CREATED)
    assert found is not None and found.status == "True"
    assert status.condition("Eviction") is None


def test_condition_type_and_status_are_always_written() -> None:
    job = PodMigrationJob.model_validate(
        {"spec": {"podRef": {"name": "p"}}, "status": {"conditions": [{}]}})
    assert job.to_dict()["status"]["conditions"] == [{"type": "", "status": ""}]


def test_nullable_condition_times_load() -> None:
    job = PodMigrationJob.model_validate({"status": {"conditions": [
        {"type": "Eviction", "status": "False", "lastProbeTime": None,
         "lastTransitionTime": None}]}})
    assert job.status is not None and job.status.conditions is not None
    assert job.status.conditions[0].last_probe_time is None


def test_kind_facts() -> None:
    assert PodMigrationJob.short_names == ("pmj",)
    assert [c["jsonPath"] for c in PodMigrationJob.printer_columns][4] == (
        ".spec.reservationOptions.reservationRef.name")
    assert PodMigrationJobSpec().to_dict() == {}
