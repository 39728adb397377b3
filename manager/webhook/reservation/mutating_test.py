"""``/mutate-reservation``: ClusterColocationProfiles applied to a new Reservation."""

from __future__ import annotations

import copy
from typing import Any

from manager.webhook.admission import AdmissionRequest
from manager.webhook.reservation.mutating import ReservationMutatingHandler
from pkg.client import ApiError
from test.apiserver.patch import json_patch


class FakeClient:
    def __init__(self, profiles: list[dict]) -> None:
        self.profiles = profiles

    def list_all(self, resource: Any, namespace: str | None = None, **_: Any) -> dict:
        return {"items": self.profiles if resource.plural == "clustercolocationprofiles" else []}

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict:
        if resource.plural == "priorityclasses" and name == "koord-batch":
            return {"metadata": {"name": name}, "value": 5000,
                    "preemptionPolicy": "PreemptLowerPriority"}
        raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')


def profile(name: str, **spec: Any) -> dict:
    return {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": {"name": name}, "spec": spec}


SPARK = profile("spark", selector={"matchLabels": {"app": "spark"}},
                # ignored for a Reservation: it has no namespace
                namespaceSelector={"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
                qosClass="BE", priorityClassName="koord-batch", koordinatorPriority=1000,
                schedulerName="koord-scheduler", labels={"team": "data"},
                annotations={"note": "colocated"})


def reservation(labels: dict[str, str], template: bool = True) -> dict:
    r: dict[str, Any] = {"apiVersion": "scheduling.koordinator.sh/v1alpha1",
                         "kind": "Reservation", "metadata": {"name": "r1", "labels": labels},
                         "spec": {"owners": [{"object": {"name": "p"}}]}}
    if template:
        r["spec"]["template"] = {"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    return r


def admit(profiles: list[dict], obj: dict, op: str = "CREATE"):
    req = AdmissionRequest(uid="u", operation=op, resource="reservations", name="r1",
                           object=obj)
    return ReservationMutatingHandler(FakeClient(profiles))(req)


def test_matching_profile_mutates_reservation_and_template() -> None:
    original = reservation({"app": "spark"})
    resp = admit([SPARK], original)
    assert resp.allowed
    stored = json_patch(copy.deepcopy(original), resp.patch)
    assert stored["metadata"]["labels"] == {"app": "spark", "team": "data",
                                            "koordinator.sh/qosClass": "BE",
                                            "koordinator.sh/priority": "1000"}
    assert stored["metadata"]["annotations"] == {"note": "colocated"}
    spec = stored["spec"]["template"]["spec"]
    assert spec["schedulerName"] == "koord-scheduler"
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == \
        ("koord-batch", 5000, "PreemptLowerPriority")
    # upstream does not rename the template's resources
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}}
    assert stored["spec"]["owners"] == original["spec"]["owners"]


def test_without_template_only_metadata_changes() -> None:
    original = reservation({"app": "spark"}, template=False)
    stored = json_patch(copy.deepcopy(original), admit([SPARK], original).patch)
    assert stored["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE"
    assert stored["spec"] == original["spec"]


def test_untouched_cases() -> None:
    assert admit([SPARK], reservation({"app": "web"})).patch == []
    assert admit([SPARK], reservation({"app": "spark"}), op="UPDATE").patch == []


def test_profile_errors_are_rejections_naming_the_field() -> None:
    bad = profile("bad", priorityClassName="koord-nope")
    resp = admit([bad], reservation({}))
    assert not resp.allowed and resp.code == 500
    assert "spec.priorityClassName" in resp.message and "koord-nope" in resp.message
