"""A ClusterColocationProfile the pod webhook could not apply as written is refused with 422,
naming the profile and the field; upstream's example and a full valid profile pass."""

from __future__ import annotations

from typing import Any

import pytest

from api.loader import load_yaml_documents
from manager.webhook.admission import AdmissionRequest
from manager.webhook.clustercolocationprofile.validating import ProfileValidatingHandler
from pkg.client import ApiError, Resource
from pkg.util.testdata import upstream_data_dir

Obj = dict[str, Any]


class PriorityClasses:
    """Knows the PriorityClasses named; ``broken`` makes every read fail with a 503."""

    def __init__(self, *names: str, broken: bool = False) -> None:
        self.names, self.broken = set(names), broken

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        if self.broken:
            raise ApiError(503, "ServiceUnavailable", "the server is shutting down")
        if resource.plural == "priorityclasses" and name in self.names:
            return {"metadata": {"name": name}, "value": 5000}
        raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found')

    def list_all(self, resource: Resource) -> Obj:
        return {"items": []}


def profile(name: str = "x", **spec: Any) -> Obj:
    return {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": {"name": name}, "spec": spec}


def review(obj: Obj, op: str = "CREATE") -> AdmissionRequest:
    return AdmissionRequest(uid="u", operation=op, resource="clustercolocationprofiles",
                            group="config.koordinator.sh", version="v1alpha1", object=obj,
                            name=obj["metadata"]["name"])


HANDLER = ProfileValidatingHandler(PriorityClasses("koord-batch"))

# (case, spec, the exact message after 'ClusterColocationProfile "x" is invalid: ')
CASES: list[tuple[str, Obj, str]] = [
    ("unknown operator", {"selector": {"matchExpressions": [
        {"key": "app", "operator": "Bogus", "values": ["web"]}]}},
     'spec.selector.matchExpressions[0].operator: Unsupported value: "Bogus": supported '
     'values: "In", "NotIn", "Exists", "DoesNotExist"'),
    ("Exists with values", {"namespaceSelector": {"matchExpressions": [
        {"key": "team", "operator": "Exists", "values": ["a"]}]}},
     "spec.namespaceSelector.matchExpressions[0].values: Forbidden: may not be specified when "
     "`operator` is 'Exists' or 'DoesNotExist'"),
    ("In without values", {"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
     "spec.selector.matchExpressions[0].values: Required value: must be specified when "
     "`operator` is 'In' or 'NotIn'"),
    ("bad label key", {"selector": {"matchLabels": {"bad key": "web"}}},
     'spec.selector.matchLabels: Invalid value: "bad key": name part must consist of '
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("bad label value in an expression", {"selector": {"matchExpressions": [
        {"key": "app", "operator": "NotIn", "values": ["has space!"]}]}},
     'spec.selector.matchExpressions[0].values[0]: Invalid value: "has space!": a valid label '
     "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
     "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
     "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("unknown qosClass", {"qosClass": "bogus"},
     'spec.qosClass: Unsupported value: "bogus": supported values: "LSE", "LSR", "LS", "BE", '
     '"SYSTEM"'),
    ("unknown priorityClassName", {"priorityClassName": "koord-nope"},
     'spec.priorityClassName: Not found: "koord-nope"'),
    ("probability over 100%", {"probability": "150%"},
     'spec.probability: Invalid value: "150%": must be between 0% and 100%'),
    ("negative probability", {"probability": -1},
     "spec.probability: Invalid value: -1: must be between 0 and 100"),
    ("probability not a percentage", {"probability": "half"},
     'spec.probability: Invalid value: "half": must be an integer or a percentage (e.g. "50%")'),
    # As Go's regexp and strconv.Atoi: no final newline, ASCII digits only.
    ("probability with a newline", {"probability": "50%\n"},
     'spec.probability: Invalid value: "50%\\n": must be an integer or a percentage (e.g. '
     '"50%")'),
    ("probability in full-width digits", {"probability": "\uff15\uff10%"},
     'spec.probability: Invalid value: "\uff15\uff10%": must be an integer or a percentage '
     '(e.g. "50%")'),
    ("label suffix with a newline", {"labelSuffixes": {"team": "-batch\n"}},
     'spec.labelSuffixes[team]: Invalid value: "-batch\\n": a suffix must be at most 63 '
     "alphanumeric characters, '-', '_' or '.'"),
    ("koordinatorPriority beyond int32", {"koordinatorPriority": 2**31},
     "spec.koordinatorPriority: Invalid value: 2147483648: must be a 32-bit integer"),
    ("patch not an object", {"patch": "spec: {}"},
     'spec.patch: Invalid value: "spec: {}": must be an object patching the pod'),
    ("patch with an unknown top-level field", {"patch": {"kind": "Deployment"}},
     'spec.patch: Unsupported value: "kind": supported values: "metadata", "spec"'),
    ("patch with a field a pod spec lacks", {"patch": {"spec": {"replicas": 3}}},
     'spec.patch.spec: Invalid value: "replicas": not a field of a pod\'s spec'),
    ("patch with a wrong type", {"patch": {"spec": {"priority": "high"}}},
     'spec.patch.spec.priority: Invalid value: "high": must be an integer'),
    ("patch container without a name", {"patch": {"spec": {"containers": [{"image": "x"}]}}},
     "spec.patch.spec.containers[0].name: Required value: containers are merged into the "
     "pod's by name"),
    ("patch label a pod cannot carry", {"patch": {"metadata": {"labels": {"a": "b c"}}}},
     'spec.patch.metadata.labels: Invalid value: "b c": a valid label must be an empty string '
     "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
     "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
     "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("label a pod cannot carry", {"labels": {"koordinator.sh/": "x"}},
     '[spec.labels: Invalid value: "koordinator.sh/": name part must be non-empty, '
     'spec.labels: Invalid value: "koordinator.sh/": name part must consist of alphanumeric '
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
     "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]"),
    ("scheduler name not a DNS subdomain", {"schedulerName": "Koord_Scheduler"},
     'spec.schedulerName: Invalid value: "Koord_Scheduler": a lowercase RFC 1123 subdomain '
     "must consist of lower case alphanumeric characters, '-' or '.', and must start and end "
     "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("label key mapping onto an invalid key", {"labelKeysMapping": {"app": "new key"}},
     'spec.labelKeysMapping[app]: Invalid value: "new key": name part must consist of '
     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
     "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("labels not strings", {"annotations": {"a": 1}},
     "spec.annotations[a]: Invalid value: 1: must be a string"),
]


@pytest.mark.parametrize(("case", "spec", "message"), CASES, ids=[c[0] for c in CASES])
def test_invalid_profile_is_refused_naming_the_field(case: str, spec: Obj, message: str) -> None:
    for op in ("CREATE", "UPDATE"):
        resp = HANDLER(review(profile(**spec), op))
        assert (resp.allowed, resp.code, resp.reason) == (False, 422, "Invalid"), case
        assert resp.message == f'ClusterColocationProfile "x" is invalid: {message}'


def test_every_error_is_listed() -> None:
    resp = HANDLER(review(profile(qosClass="bogus", probability=101, selector={
        "matchExpressions": [{"key": "app", "operator": "Bogus"}]})))
    assert resp.message.startswith('ClusterColocationProfile "x" is invalid: [')
    for field in ("spec.selector.matchExpressions[0].operator", "spec.qosClass",
                  "spec.probability"):
        assert f"{field}: " in resp.message


def test_valid_profiles_pass() -> None:
    path = upstream_data_dir() / "examples/spark-jobs/cluster-colocation-profile.yaml"
    example = next(d for d in load_yaml_documents(path.read_text())
                   if d.get("kind") == "ClusterColocationProfile")
    assert HANDLER(review(example)).allowed
    full = profile(
        namespaceSelector={"matchLabels": {"koordinator.sh/enable-colocation": "true"}},
        selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["spark"]},
                                       {"key": "tier", "operator": "DoesNotExist"}]},
        probability="50%", qosClass="BE", priorityClassName="koord-batch",
        koordinatorPriority=1000, labels={"team": "data"}, annotations={"note": "batch"},
        labelKeysMapping={"app": "koordinator.sh/app"}, labelSuffixes={"team": "-batch"},
        schedulerName="koord-scheduler",
        patch={"metadata": {"labels": {"old": None}},
               "spec": {"tolerations": [{"key": "batch", "operator": "Exists"}],
                        "containers": [{"name": "main", "env": [{"name": "A", "value": "1"}]}],
                        "nodeName": None}})
    assert HANDLER(review(full)).allowed
    assert HANDLER(review(profile(probability=0))).allowed


def test_delete_is_not_validated() -> None:
    bad = profile(qosClass="bogus")
    req = AdmissionRequest(uid="u", operation="DELETE", resource="clustercolocationprofiles",
                           old_object=bad)
    assert HANDLER(req).allowed


def test_unreadable_priority_class_is_an_internal_error_naming_the_field() -> None:
    resp = ProfileValidatingHandler(PriorityClasses(broken=True))(
        review(profile(priorityClassName="koord-batch")))
    assert (resp.allowed, resp.code) == (False, 500)
    assert resp.message.startswith('ClusterColocationProfile "x": spec.priorityClassName: ')
    assert "the server is shutting down" in resp.message
