"""Reservations end to end: koord-scheduler as a process against the embedded API server,
running as its ServiceAccount on real time.

Upstream's sample Reservation becomes Available on a node (allocatable, Scheduled/Ready
conditions, a ``Scheduled`` event); with the node otherwise full, a pod that is not its owner
stays pending while its owner lands in it and carries the reservation-allocated annotation,
after which the allocate-once Reservation is Succeeded. A Reservation too big for every node
says so (Scheduled=False, reason Unschedulable, a FailedScheduling event) until a node that
fits it joins; when its ttl runs out it is Failed (Expired) and its resources are free again.

Preemption (§7.10): with the node full and a reusable Reservation full with a priority-0
consumer, a higher-priority owner of the Reservation evicts that consumer (DefaultPreemption,
the Reservation plugin's PreFilter extensions telling it what the victim frees inside the
Reservation) and lands in the Reservation; with ``enablePreemption`` the plugin preempts
itself and spares a consumer labelled ``disable-preemptible``, the owner staying pending.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.extension.preemption import LABEL_DISABLE_PREEMPTIBLE
from api.extension.reservation import ANNOTATION_RESERVATION_ALLOCATED, parse_reservation_allocated
from hack import koord_cli
from pkg.client.resources import EVENTS, PODS, PRIORITY_CLASSES, RESERVATIONS
from pkg.client.rest import Client
from pkg.util.testdata import upstream_data_dir
from scheduler.plugins.reservation.testing import reservation_config
from test.apiserver import ServerHandle
from test.e2e.cluster import (
    guaranteed_pod,
    node_of,
    running_scheduler,
    unschedulable_message,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
DEADLINE = 30.0


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[str]:
    with running_scheduler(kubeconfig_of(SCHEDULER), reservation_config(), tmp_path) as url:
        yield url


@pytest.fixture
def preempting_scheduler(kubeconfig_of: KubeconfigOf, client: Client,
                         tmp_path: Path) -> Iterator[str]:
    """The Reservation plugin with ``enablePreemption``, in place of DefaultPreemption."""
    with running_scheduler(kubeconfig_of(SCHEDULER),
                           reservation_config(enable_preemption=True), tmp_path) as url:
        yield url


def _status(client: Client, name: str) -> dict[str, Any]:
    return client.get(RESERVATIONS, name).get("status") or {}


def _phase_is(client: Client, name: str, phase: str) -> dict[str, Any] | None:
    status = _status(client, name)
    return status if status.get("phase") == phase else None


def _condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions") or () if c.get("type") == type_)


def _event(client: Client, name: str, reason: str) -> dict[str, Any] | None:
    return next((e for e in client.list(EVENTS, "default")["items"]
                 if e["involvedObject"].get("name") == name and e["reason"] == reason), None)


def _pending_because(client: Client, name: str) -> bool:
    return bool(unschedulable_message(client, name))


def test_the_sample_reservation_is_available_and_consumed_by_its_owner_only(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    srv.add_nodes(1, cpu="1", memory="4Gi")
    sample = yaml.safe_load(
        (upstream_data_dir() / "config" / "samples" / "scheduling_v1alpha1_reservation.yaml")
        .read_text())
    created = client.create(RESERVATIONS, sample)
    status = wait_for(partial(_phase_is, client, "reservation-sample", "Available"), DEADLINE,
                      what="the sample Reservation Available")
    assert status["nodeName"] == "node-0"
    assert status["allocatable"] == {"cpu": "200m", "memory": "400Mi"}
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Scheduled", "True", "Scheduled"), ("Ready", "True", "Available")]
    event = wait_for(partial(_event, client, "reservation-sample", "Scheduled"), DEADLINE,
                     what="a Scheduled event on the Reservation")
    assert event["message"] == "Successfully assigned reservation-sample to node-0"

    # The node's other 800m go to a filler; the reserved 200m are the owner's alone.
    client.create(PODS, guaranteed_pod("filler", cpu="800m"))
    wait_for(partial(node_of, client, "filler"), DEADLINE, what="filler bound")
    client.create(PODS, guaranteed_pod("intruder", cpu="200m", memory="400Mi"))
    wait_for(partial(_pending_because, client, "intruder"), DEADLINE,
             what="intruder unschedulable")
    assert "Insufficient cpu" in unschedulable_message(client, "intruder")

    client.create(PODS, guaranteed_pod("reserve-demo-0", cpu="200m", memory="400Mi"))
    assert wait_for(partial(node_of, client, "reserve-demo-0"), DEADLINE,
                    what="the owner bound") == "node-0"
    pod = client.get(PODS, "reserve-demo-0", "default")
    allocated = parse_reservation_allocated(pod["metadata"]["annotations"])
    assert pod["metadata"]["annotations"][ANNOTATION_RESERVATION_ALLOCATED]
    assert allocated is not None and (allocated.name, allocated.uid) == (
        "reservation-sample", created["metadata"]["uid"])

    status = wait_for(partial(_phase_is, client, "reservation-sample", "Succeeded"), DEADLINE,
                      what="the allocate-once Reservation Succeeded")
    assert [o["name"] for o in status["currentOwners"]] == ["reserve-demo-0"]
    assert node_of(client, "intruder") == ""


def test_a_reservation_waits_for_a_node_that_fits_and_expires_by_its_ttl(
        srv: ServerHandle, client: Client, scheduler: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    srv.add_nodes(1, cpu="1", memory="4Gi")
    # Long enough to be Available and turn a pod away before it expires on a busy machine.
    client.create(RESERVATIONS, {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": "big"},
        "spec": {"ttl": "20s", "template": {"spec": {
                     "schedulerName": SCHEDULER, "containers": [{"name": "main", "resources": {
                         "requests": {"cpu": "3", "memory": "1Gi"}}}]}},
                 "owners": [{"object": {"namespace": "default", "name": "big-owner"}}]}})

    def unschedulable() -> dict[str, Any] | None:
        conditions = _status(client, "big").get("conditions") or ()
        return next((c for c in conditions if c.get("type") == "Scheduled"
                     and c.get("status") == "False"), None)
    condition = wait_for(unschedulable, DEADLINE, what="big says it is unschedulable")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert wait_for(partial(_event, client, "big", "FailedScheduling"), DEADLINE,
                    what="a FailedScheduling event on the Reservation")
    # hack/koord explains it as it would a pending pod.
    explain = ["explain", "reservation", "big", "--scheduler", scheduler,
               "--kubeconfig", srv.kubeconfig]
    capsys.readouterr()
    assert koord_cli.main(explain) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reservation big: Pending (ttl 20s, allocate-once)")
    assert "Scheduled=False (Unschedulable): 0/1 nodes are available: 1 Insufficient cpu." in out
    assert "NodeResourcesFit: 1 node(s)" in out

    srv.add_nodes(1, prefix="large-", cpu="4", memory="8Gi")
    status = wait_for(partial(_phase_is, client, "big", "Available"), DEADLINE,
                      what="big Available once a node fits it")
    assert status["nodeName"] == "large-0"
    assert _condition(status, "Scheduled")["status"] == "True"
    assert koord_cli.main(explain) == 0
    out = capsys.readouterr().out
    assert out.startswith("Reservation big: Available on node large-0")
    assert "allocatable: cpu=3, memory=1Gi" in out and "NodeResourcesFit" not in out

    # large-0 has 1 cpu left besides the Reservation, node-0 has 1: a 2-cpu pod waits for
    # the expiry.
    client.create(PODS, guaranteed_pod("later", cpu="2", memory="1Gi"))
    wait_for(partial(_pending_because, client, "later"), DEADLINE, what="later unschedulable")
    status = wait_for(partial(_phase_is, client, "big", "Failed"), DEADLINE,
                      what="big expired")
    assert _condition(status, "Ready")["reason"] == "Expired"
    assert wait_for(partial(node_of, client, "later"), DEADLINE,
                    what="later bound once big expired") == "large-0"


# Preemption ---------------------------------------------------------------------------------

def _reservation_of(client: Client, name: str) -> str:
    pod = client.get(PODS, name, "default")
    allocated = parse_reservation_allocated(pod["metadata"].get("annotations"))
    return allocated.name if allocated is not None else ""


def _full_reservation(srv: ServerHandle, client: Client,
                      consumer_labels: dict[str, str] | None = None) -> None:
    """One 4-cpu node: a reusable 2-cpu Reservation "web" full with web-low (priority 0), the
    other 2 cpu taken by "other" (priority 1000); two priority classes for the rest."""
    for name, value in (("rsv-high", 1000), ("rsv-mid", 100)):
        client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                         "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value})
    srv.add_nodes(1, cpu="4", memory="8Gi")
    client.create(RESERVATIONS, {
        "apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
        "metadata": {"name": "web"},
        "spec": {"ttl": "1h", "allocateOnce": False, "template": {"spec": {
                     "schedulerName": SCHEDULER, "containers": [{"name": "main", "resources": {
                         "requests": {"cpu": "2", "memory": "1Gi"}}}]}},
                 "owners": [{"labelSelector": {"matchLabels": {"app": "web"}}}]}})
    wait_for(partial(_phase_is, client, "web", "Available"), DEADLINE, what="web Available")
    client.create(PODS, guaranteed_pod("other", cpu="2", priority_class="rsv-high"))
    client.create(PODS, guaranteed_pod("web-low", cpu="2", memory="1Gi",
                                       labels={"app": "web", **(consumer_labels or {})}))
    wait_for(lambda: node_of(client, "other") and node_of(client, "web-low"), DEADLINE,
             what="other and web-low bound")
    assert _reservation_of(client, "web-low") == "web"


def test_a_higher_priority_owner_preempts_the_consumer_of_a_full_reservation(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    _full_reservation(srv, client)
    client.create(PODS, guaranteed_pod("web-high", cpu="2", memory="1Gi",
                                       labels={"app": "web"}, priority_class="rsv-mid"))
    event = wait_for(partial(_event, client, "web-low", "Preempted"), DEADLINE,
                     what="a Preempted event on web-low")
    assert event["message"].startswith("Preempted by pod ")
    assert wait_for(partial(node_of, client, "web-high"), DEADLINE,
                    what="web-high bound") == "node-0"
    assert _reservation_of(client, "web-high") == "web"
    assert node_of(client, "web-low") == "" and node_of(client, "other") == "node-0"


def test_with_enable_preemption_a_disable_preemptible_consumer_is_spared(
        srv: ServerHandle, client: Client, preempting_scheduler: str) -> None:
    _full_reservation(srv, client, {LABEL_DISABLE_PREEMPTIBLE: "true"})
    client.create(PODS, guaranteed_pod("web-high", cpu="2", memory="1Gi",
                                       labels={"app": "web"}, priority_class="rsv-mid"))
    def after_preemption() -> str:
        message = unschedulable_message(client, "web-high")
        return message if "preemption:" in message else ""
    message = wait_for(after_preemption, DEADLINE, what="web-high pending after preemption")
    assert "No preemption victims found for incoming pod" in message
    assert "1 Reservation(s) matched owner total" in message
    assert node_of(client, "web-low") == "node-0"
    assert _event(client, "web-low", "Preempted") is None
