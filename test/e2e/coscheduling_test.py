"""Coscheduling end to end: koord-scheduler as a process against the embedded API server.

A PodGroup's pods wait until minMember exist, saying so on each pod, then bind together (and
the PodGroup's status follows them to Running); a
gang larger than the cluster binds no member: in Strict mode the waiting members are rejected
as soon as one member cannot be placed, in NonStrict mode they wait until the gang's
scheduleTimeoutSeconds runs out. ``hack/koord explain pod`` shows a gang pod's gang: held
before any attempt (members 2 of 3), or its members waiting at Permit and the time left. With
``enablePreemption``, a higher-priority gang evicts a lower-priority gang filling the nodes and
binds whole, while a gang that would not fit even then evicts nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from api.extension.coscheduling import (
    ANNOTATION_BIND_GANG_GROUP_ID,
    ANNOTATION_BIND_GANG_MEMBER_COUNT,
    ANNOTATION_GANG_GROUPS,
    ANNOTATION_GANG_MODE,
    LABEL_POD_GROUP,
)
from hack import koord_cli
from pkg.client.errors import is_not_found
from pkg.client.resources import EVENTS, POD_GROUPS, PODS, PRIORITY_CLASSES
from pkg.client.rest import Client
from scheduler.plugins.coscheduling.testing import coscheduling_config, gang_annotations
from test.apiserver import ServerHandle
from test.e2e.cluster import (
    bound,
    guaranteed_pod,
    running_scheduler,
    unschedulable_message,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

SCHEDULER = "koord-scheduler"
DEADLINE = 60.0


pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def scheduler(kubeconfig_of: KubeconfigOf, client: Client, tmp_path: Path) -> Iterator[str]:
    """koord-scheduler's debug URL."""
    # koord-scheduler runs as the chart's koord-scheduler ServiceAccount.
    with running_scheduler(kubeconfig_of(SCHEDULER), coscheduling_config(), tmp_path) as url:
        yield url


def _pod_group(client: Client, name: str, min_member: int, timeout: int,
               annotations: dict[str, str] | None = None) -> None:
    client.create(POD_GROUPS, {
        "apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout}})


def _member(client: Client, name: str, group: str = "", cpu: str = "100m",
            annotations: dict[str, str] | None = None, priority_class: str = "") -> None:
    labels = {LABEL_POD_GROUP: group} if group else {}
    client.create(PODS, guaranteed_pod(name, scheduler=SCHEDULER, cpu=cpu, labels=labels,
                                       annotations=annotations,
                                       priority_class=priority_class))


def _pod(client: Client, name: str) -> dict[str, Any]:
    return client.get(PODS, name, "default")


def _says(client: Client, name: str, message: str) -> bool:
    return unschedulable_message(client, name) == message


def _pod_group_status(client: Client, name: str, phase: str) -> dict[str, Any] | None:
    status = client.get(POD_GROUPS, name, "default").get("status") or {}
    return status if status.get("phase") == phase else None


def test_a_pod_group_waits_for_min_member_then_binds_together(
        srv: ServerHandle, client: Client, scheduler: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    srv.add_nodes(2, cpu="4", memory="8Gi")
    _pod_group(client, "train", 3, 60)
    _member(client, "train-0", "train")
    _member(client, "train-1", "train")
    held = ("gangGroup [default/train] basic check: memberGangs [default/train] child pod not "
            "collect enough (default/train has 2 of 3 pods), current gang: default/train, "
            "podName: default/{}")
    for name in ("train-0", "train-1"):
        wait_for(partial(_says, client, name, held.format(name)), DEADLINE,
                 what=f"{name} says it waits for its gang")
    # Later holds with a new count fold into the first event's series (events.k8s.io keeps
    # the first note), so the event names the gang with the count it saw first.
    wait_for(lambda: any(e["reason"] == "FailedScheduling"
                         and e["involvedObject"]["name"] == "train-1"
                         and e["message"].startswith(
                             "gangGroup [default/train] basic check: memberGangs "
                             "[default/train] child pod not collect enough (default/train has ")
                         for e in client.list(EVENTS, "default")["items"]),
             DEADLINE, what="a FailedScheduling event naming the gang")
    assert bound(client, ["train-0", "train-1"]) == []
    # Held before any attempt, the pod is still explained: by its gang.
    capsys.readouterr()
    assert koord_cli.main(["explain", "pod", "default/train-1", "--scheduler", scheduler]) == 0
    explained = capsys.readouterr().out
    assert ("Gang default/train (GangFromPodGroupCrd, Strict, match policy once-satisfied): "
            "members 2 of 3 required (totalNumber 3)") in explained
    assert "  members: (default/train-0, default/train-1)" in explained
    assert "  this pod: HeldAtPreEnqueue: " + held.format("train-1") in explained

    _member(client, "train-2", "train")
    members = ["train-0", "train-1", "train-2"]
    wait_for(lambda: len(bound(client, members)) == 3, DEADLINE, what="all three members bound")
    for name in members:
        annotations = _pod(client, name)["metadata"]["annotations"]
        assert annotations[ANNOTATION_BIND_GANG_GROUP_ID] == "default/train"
        assert annotations[ANNOTATION_BIND_GANG_MEMBER_COUNT] == "3"
    # The PodGroup controller follows: the simulated nodes run the members.
    status = wait_for(lambda: _pod_group_status(client, "train", "Running"), DEADLINE,
                      what="PodGroup train Running")
    assert (status["scheduled"], status["running"]) == (3, 3)


def _too_big_gang(srv: ServerHandle, client: Client, timeout: int,
                  annotations: dict[str, str] | None = None) -> list[str]:
    """Three members of 1.5 cpus on two nodes of 2 cpus: two fit, the third never does."""
    srv.add_nodes(2, cpu="2", memory="8Gi")
    _pod_group(client, "big", 3, timeout, annotations)
    names = [f"big-{i}" for i in range(3)]
    for name in names:
        _member(client, name, "big", cpu="1500m")
    return names


def test_strict_gang_larger_than_the_cluster_binds_no_member(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    names = _too_big_gang(srv, client, timeout=600)

    def rejected_as_a_gang() -> list[str]:
        return [n for n in names if unschedulable_message(client, n).startswith(
            'GangGroup "default/big" gets rejected due to member Pod')]

    # Long before the 600 s timeout, the members that had a place are sent back.
    wait_for(rejected_as_a_gang, DEADLINE, what="members rejected with the gang's failure")
    assert bound(client, names) == []


def test_non_strict_gang_larger_than_the_cluster_times_out_binding_no_member(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    names = _too_big_gang(srv, client, timeout=3, annotations={ANNOTATION_GANG_MODE: "NonStrict"})

    # A member that timed out is retried at once and may show another message by the time the
    # other one times out, so the members seen timing out are gathered over the wait.
    seen: set[str] = set()

    def timed_out() -> set[str]:
        seen.update(n for n in names if "rejected due to timeout after waiting 3s at plugin "
                    "Coscheduling" in unschedulable_message(client, n))
        return seen

    assert len(wait_for(lambda: len(timed_out()) >= 2 and seen, DEADLINE,
                        what="the two placed members time out")) >= 2
    assert bound(client, names) == []


def test_explain_shows_members_waiting_at_permit_and_the_time_left(
        srv: ServerHandle, client: Client, scheduler: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    names = _too_big_gang(srv, client, timeout=600,
                          annotations={ANNOTATION_GANG_MODE: "NonStrict"})

    def explained(name: str) -> dict[str, Any]:
        capsys.readouterr()
        koord_cli.main(["explain", "pod", f"default/{name}", "--scheduler", scheduler,
                        "-o", "json"])
        return json.loads(capsys.readouterr().out or "{}")

    def two_waiting() -> dict[str, Any] | None:
        gang = explained(names[0]).get("gang") or {}
        return gang if len(gang.get("waitingForBindChildren") or ()) == 2 else None

    gang = wait_for(two_waiting, DEADLINE, what="two members waiting at Permit")
    assert gang["minRequiredNumber"] == 3 and gang["mode"] == "NonStrict"
    assert gang["boundChildren"] == []
    assert 0 < gang["timeLeftSeconds"] <= 600
    waiting = gang["waitingForBindChildren"][0].split("/")[1]
    capsys.readouterr()
    assert koord_cli.main(["explain", "pod", f"default/{waiting}", "--scheduler",
                           scheduler]) == 0
    text = capsys.readouterr().out
    assert "  waiting at Permit (assumed): 2 (" in text
    assert "left before the timeout rejects the group's waiting members" in text
    assert "  this pod: WaitingAtPermit" in text
    assert bound(client, names) == []


def test_annotation_gangs_of_a_group_bind_only_together(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    srv.add_nodes(1, cpu="4", memory="8Gi")
    groups = {ANNOTATION_GANG_GROUPS: '["default/driver","default/workers"]'}
    _member(client, "driver", annotations={**gang_annotations("driver", 1), **groups})
    _member(client, "worker-0", annotations={**gang_annotations("workers", 2), **groups})
    wait_for(lambda: "memberGangs [default/driver default/workers] child pod not collect "
             "enough (default/workers has 1 of 2 pods)" in unschedulable_message(
                 client, "driver"), DEADLINE, what="the driver waits for the workers")
    assert bound(client, ["driver", "worker-0"]) == []
    _member(client, "worker-1", annotations={**gang_annotations("workers", 2), **groups})
    names = ["driver", "worker-0", "worker-1"]
    wait_for(lambda: len(bound(client, names)) == 3, DEADLINE, what="the whole group bound")
    for name in names:
        annotations = _pod(client, name)["metadata"]["annotations"]
        assert annotations[ANNOTATION_BIND_GANG_GROUP_ID] == "default/driver,default/workers"


def test_a_malformed_gang_annotation_is_reported_on_the_pod(
        srv: ServerHandle, client: Client, scheduler: str) -> None:
    srv.add_nodes(1, cpu="4", memory="8Gi")
    _member(client, "odd", annotations=gang_annotations("odd", "three"))
    event = wait_for(lambda: next((e for e in client.list(EVENTS, "default")["items"]
                                   if e["reason"] == "InvalidGangAnnotation"), None),
                     DEADLINE, what="an InvalidGangAnnotation event")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "odd"
    assert "gang.scheduling.koordinator.sh/min-available" in event["message"]
    assert "'three'" in event["message"]
    wait_for(partial(_says, client, "odd", "gang has not init, gangName: default/odd, "
                     "podName: default/odd"), DEADLINE, what="the pod says why it waits")
    assert bound(client, ["odd"]) == []


# Job-level preemption ----------------------------------------------------------------------

@pytest.fixture
def preempting_scheduler(kubeconfig_of: KubeconfigOf, client: Client,
                         tmp_path: Path) -> Iterator[None]:
    """koord-scheduler with Coscheduling's enablePreemption (and no DefaultPreemption, as the
    chart's default ``scheduler.enableJobPreemption``), and two priority classes."""
    for name, value in (("gang-low", 100), ("gang-high", 1000)):
        client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                         "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value})
    with running_scheduler(kubeconfig_of(SCHEDULER),
                           coscheduling_config(enable_preemption=True), tmp_path):
        yield


def _gang(client: Client, name: str, size: int, priority_class: str) -> list[str]:
    """A PodGroup of ``size`` members of 1.5 cpus (one per 2-cpu node)."""
    _pod_group(client, name, size, 600)
    names = [f"{name}-{i}" for i in range(size)]
    for n in names:
        _member(client, n, name, cpu="1500m", priority_class=priority_class)
    return names


def _gone(client: Client, name: str) -> bool:
    try:
        client.get(PODS, name, "default")
    except Exception as err:  # noqa: BLE001 - only NotFound means gone
        if is_not_found(err):
            return True
        raise
    return False


def _preempted(client: Client) -> set[str]:
    return {e["involvedObject"]["name"] for e in client.list(EVENTS, "default")["items"]
            if e["reason"] == "Preempted"}


def test_a_higher_priority_gang_evicts_a_lower_one_and_binds_whole(
        srv: ServerHandle, client: Client, preempting_scheduler: None) -> None:
    srv.add_nodes(3, cpu="2", memory="8Gi")
    low = _gang(client, "low", 3, "gang-low")
    wait_for(lambda: len(bound(client, low)) == 3, DEADLINE, what="the low gang bound")

    high = _gang(client, "high", 3, "gang-high")

    wait_for(lambda: all(_gone(client, n) for n in low), DEADLINE,
             what="every low-priority member evicted")
    wait_for(lambda: _preempted(client) >= set(low), DEADLINE,
             what="a Preempted event on every low-priority member")
    wait_for(lambda: len(bound(client, high)) == 3, DEADLINE,
             what="every high-priority member bound")


def test_a_gang_that_would_not_fit_even_after_preemption_evicts_nothing(
        srv: ServerHandle, client: Client, preempting_scheduler: None) -> None:
    srv.add_nodes(2, cpu="2", memory="8Gi")
    low = _gang(client, "low", 2, "gang-low")
    wait_for(lambda: len(bound(client, low)) == 2, DEADLINE, what="the low gang bound")

    high = _gang(client, "high", 3, "gang-high")

    # A later member of the same round reports the attempt that found no room for the gang.
    wait_for(lambda: any(e["reason"] == "FailedScheduling"
                         and e["involvedObject"]["name"] in high
                         and "preemption already attempted by default/high-" in e["message"]
                         for e in client.list(EVENTS, "default")["items"]),
             DEADLINE, what="the high gang's preemption attempted and given up")
    assert bound(client, low) == low
    assert _preempted(client) == set()
    assert bound(client, high) == []
