"""A stored ClusterColocationProfile with a selector that does not parse matches no pod (upstream
matches every pod), and one Warning event per profile generation names it and the field."""

from __future__ import annotations

import copy
from typing import Any

from manager.webhook.admission import AdmissionRequest
from manager.webhook.pod.colocation_profile import ProfileMatcher
from manager.webhook.pod.mutating import PodMutatingHandler
from pkg.client import ApiError, Resource
from pkg.events import EventBroadcaster
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate

Obj = dict[str, Any]


class Sink:
    def __init__(self) -> None:
        self.events: list[Obj] = []

    def create(self, event: Obj) -> Obj:
        self.events.append(event)
        return event

    def patch(self, namespace: str, name: str, patch: Obj) -> Obj:
        return patch


class Profiles:
    def __init__(self, *profiles: Obj) -> None:
        self.profiles = list(profiles)

    def list_all(self, resource: Resource) -> Obj:
        return {"items": copy.deepcopy(self.profiles)}

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        if resource.plural == "namespaces":
            return {"metadata": {"name": name}}
        raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')


def bad_profile(generation: int = 1) -> Obj:
    """Meant for spark pods; its operator is misspelt."""
    return {"metadata": {"name": "spark-be", "uid": "u-1", "generation": generation},
            "spec": {"selector": {"matchExpressions": [
                {"key": "app", "operator": "in", "values": ["spark"]}]},
                "qosClass": "BE", "schedulerName": "koord-scheduler"}}


def web_pod(name: str) -> AdmissionRequest:
    pod = {"metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
    return AdmissionRequest(uid=name, operation="CREATE", resource="pods", object=pod,
                            namespace="default")


def test_profile_with_invalid_selector_matches_nothing_and_warns_once_per_generation() -> None:
    client = Profiles(bad_profile())
    sink = Sink()
    events = EventBroadcaster(sink)
    matcher = ProfileMatcher(client, recorder=events.new_recorder("koord-manager"))
    handler = PodMutatingHandler(client, FeatureGate(DEFAULT_FEATURE_GATES), matcher)
    for i in range(3):
        resp = handler(web_pod(f"web-{i}"))
        assert resp.allowed and resp.patch == []  # not turned into BE
    events.flush()
    assert len(sink.events) == 1
    event = sink.events[0]
    assert (event["type"], event["reason"]) == ("Warning", "InvalidSelector")
    assert event["involvedObject"]["kind"] == "ClusterColocationProfile"
    assert event["involvedObject"]["name"] == "spark-be"
    assert event["message"] == (
        'ClusterColocationProfile "spark-be" (generation 1) matches no pod: '
        "spec.selector.matchExpressions[0]"
        '.operator: Unsupported value: "in": supported values: "In", "NotIn", "Exists", '
        '"DoesNotExist"')
    # An edit that is still invalid is a new generation: reported again, once.
    client.profiles = [bad_profile(generation=2)]
    handler(web_pod("web-3"))
    handler(web_pod("web-4"))
    events.flush()
    assert len(sink.events) == 2
    assert "(generation 2)" in sink.events[1]["message"]
    events.shutdown()


def test_namespace_selector_that_does_not_parse_matches_nothing() -> None:
    bad = bad_profile()
    bad["spec"] = {"namespaceSelector": {"matchExpressions": [
        {"key": "team", "operator": "Exists", "values": ["a"]}]}, "qosClass": "BE"}
    good = {"metadata": {"name": "web-ls"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "qosClass": "LS"}}
    handler = PodMutatingHandler(Profiles(bad, good), FeatureGate(DEFAULT_FEATURE_GATES))
    resp = handler(web_pod("web-0"))
    # Only the valid profile applies.
    assert resp.patch == [{"op": "add", "path": "/metadata/labels/koordinator.sh~1qosClass",
                           "value": "LS"}]
