"""CustomResourceDefinitions with the official client: serving, versions, status subresource,
schema defaults, pruning, strict field validation, patch types and watches."""

from __future__ import annotations

import json

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from test.apiserver import start
from test.apiserver.testing import api_client, raw_request

GROUP = "example.koordinator.sh"

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "shortNames": ["wd"], "categories": ["all"]},
        "versions": [
            {"name": "v1alpha1", "served": True, "storage": False,
             "schema": {"openAPIV3Schema": {"type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True}}},
            {"name": "v1beta1", "served": True, "storage": True,
             "subresources": {"status": {},
                              "scale": {"specReplicasPath": ".spec.replicas",
                                        "statusReplicasPath": ".status.replicas"}},
             "additionalPrinterColumns": [
                 {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                 {"name": "Phase", "type": "string", "jsonPath": ".status.phase"}],
             "schema": {"openAPIV3Schema": {
                 "type": "object",
                 "properties": {
                     "spec": {"type": "object", "properties": {
                         "size": {"type": "string", "default": "small",
                                  "enum": ["small", "large"]},
                         "replicas": {"type": "integer", "minimum": 0},
                         "ttl": {"type": "string", "default": "24h"},
                         "template": {"type": "object",
                                      "x-kubernetes-preserve-unknown-fields": True},
                         "ports": {"type": "array", "items": {
                             "type": "object", "properties": {
                                 "port": {"type": "integer"},
                                 "protocol": {"type": "string", "default": "TCP"}}}}}},
                     "status": {"type": "object", "properties": {
                         "phase": {"type": "string"}, "replicas": {"type": "integer"}}}}}}},
        ],
    },
}


@pytest.fixture(scope="module")
def srv():
    s = start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def apis(srv):
    c = api_client(srv)
    ext = client.ApiextensionsV1Api(c)
    created = ext.create_custom_resource_definition(CRD)
    assert any(cond.type == "Established" and cond.status == "True"
               for cond in created.status.conditions)
    return c, ext, client.CustomObjectsApi(c)


def widget(name: str, **spec: object) -> dict:
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "Widget",
            "metadata": {"name": name}, "spec": dict(spec)}


def test_discovery_lists_crd_versions_and_subresources(apis):
    c, _, _ = apis
    code, res = raw_request(c, "GET", f"/apis/{GROUP}/v1beta1")
    assert code == 200
    by_name = {r["name"]: r for r in res["resources"]}
    assert by_name["widgets"]["kind"] == "Widget"
    assert by_name["widgets"]["shortNames"] == ["wd"]
    assert by_name["widgets"]["namespaced"] is True
    assert {"widgets/status", "widgets/scale"} <= set(by_name)
    groups = client.ApisApi(c).get_api_versions()
    g = next(g for g in groups.groups if g.name == GROUP)
    assert [v.version for v in g.versions] == ["v1beta1", "v1alpha1"]
    assert g.preferred_version.version == "v1beta1"


def test_defaults_and_pruning(apis):
    _, _, co = apis
    obj = co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", widget(
        "w1", replicas=1, bogus="x", ports=[{"port": 80}], template={"anything": {"goes": 1}}))
    assert obj["spec"]["size"] == "small" and obj["spec"]["ttl"] == "24h"
    assert obj["spec"]["ports"] == [{"port": 80, "protocol": "TCP"}]
    assert "bogus" not in obj["spec"]
    assert obj["spec"]["template"] == {"anything": {"goes": 1}}
    assert obj["metadata"]["generation"] == 1


def test_strict_field_validation_rejects_unknown_fields(srv, apis):
    c, _, _ = apis
    code, body = raw_request(c, "POST", f"/apis/{GROUP}/v1beta1/namespaces/default/widgets",
                             widget("strict", bogus=1), query={"fieldValidation": "Strict"})
    assert code == 400 and body["reason"] == "BadRequest"
    assert 'unknown field "spec.bogus"' in body["message"]


def test_schema_validation(apis):
    _, _, co = apis
    with pytest.raises(ApiException) as e:
        co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets",
                                           widget("bad", size="huge", replicas=-1))
    body = json.loads(e.value.body)
    assert body["code"] == 422 and body["reason"] == "Invalid"
    fields = {c["field"] for c in body["details"]["causes"]}
    assert fields == {"spec.size", "spec.replicas"}


def test_status_subresource_and_generation(apis):
    _, _, co = apis
    co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets",
                                       widget("w2", replicas=1))
    # The main resource ignores status; the status subresource ignores everything else.
    o = co.patch_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w2",
                                          {"status": {"phase": "Ready"}})
    assert "status" not in o and o["metadata"]["generation"] == 1
    o = co.patch_namespaced_custom_object_status(
        GROUP, "v1beta1", "default", "widgets", "w2",
        {"status": {"phase": "Ready"}, "spec": {"replicas": 5}})
    assert o["status"]["phase"] == "Ready" and o["spec"]["replicas"] == 1
    assert o["metadata"]["generation"] == 1
    o = co.patch_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w2",
                                          {"spec": {"replicas": 3}})
    assert o["metadata"]["generation"] == 2 and o["status"]["phase"] == "Ready"
    scale = co.get_namespaced_custom_object_scale(GROUP, "v1beta1", "default", "widgets", "w2")
    assert scale["spec"]["replicas"] == 3


def test_served_versions_share_storage(apis):
    _, _, co = apis
    co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", widget("w3"))
    old = co.get_namespaced_custom_object(GROUP, "v1alpha1", "default", "widgets", "w3")
    assert old["apiVersion"] == f"{GROUP}/v1alpha1"
    names = [i["metadata"]["name"] for i in co.list_namespaced_custom_object(
        GROUP, "v1alpha1", "default", "widgets")["items"]]
    assert "w3" in names


def test_patch_types_for_custom_resources(srv, apis):
    c, _, co = apis
    co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", widget("w4"))
    path = f"/apis/{GROUP}/v1beta1/namespaces/default/widgets/w4"
    code, body = raw_request(c, "PATCH", path, {"spec": {"size": "large"}},
                             "application/strategic-merge-patch+json")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    code, _ = raw_request(c, "PATCH", path,
                          [{"op": "replace", "path": "/spec/size", "value": "large"}],
                          "application/json-patch+json")
    assert code == 200
    o = co.get_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w4")
    assert o["spec"]["size"] == "large"


def test_watch_custom_objects(apis):
    _, _, co = apis
    lst = co.list_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets")
    rv = lst["metadata"]["resourceVersion"]
    co.create_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", widget("w5"))
    co.delete_namespaced_custom_object(GROUP, "v1beta1", "default", "widgets", "w5")
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in watch.Watch().stream(
        co.list_namespaced_custom_object, GROUP, "v1beta1", "default", "widgets",
        resource_version=rv, timeout_seconds=1)]
    assert got == [("ADDED", "w5"), ("DELETED", "w5")]


def test_cluster_scoped_crd_and_deletion(apis):
    c, ext, co = apis
    crd = json.loads(json.dumps(CRD))
    crd["metadata"]["name"] = f"gadgets.{GROUP}"
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    ext.create_custom_resource_definition(crd)
    co.create_cluster_custom_object(GROUP, "v1beta1", "gadgets", {
        "apiVersion": f"{GROUP}/v1beta1", "kind": "Gadget", "metadata": {"name": "g1"},
        "spec": {}})
    assert co.get_cluster_custom_object(GROUP, "v1beta1", "gadgets", "g1")["spec"] == {
        "size": "small", "ttl": "24h"}
    ext.delete_custom_resource_definition(f"gadgets.{GROUP}")
    with pytest.raises(ApiException) as e:
        co.get_cluster_custom_object(GROUP, "v1beta1", "gadgets", "g1")
    assert e.value.status == 404


def test_crd_name_must_match(apis):
    _, ext, _ = apis
    crd = json.loads(json.dumps(CRD))
    crd["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiException) as e:
        ext.create_custom_resource_definition(crd)
    assert e.value.status == 422


QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                       r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$",
            "x-kubernetes-int-or-string": True}


@pytest.mark.parametrize("value", ["lots", "NaN", "+Inf", ""])
def test_int_or_string_string_must_match_the_pattern(value: str) -> None:
    """A ResourceList value of a Koordinator CRD (``cpu: NaN``) is refused as kube-apiserver
    refuses it, naming the field and the pattern."""
    from test.apiserver.crds import validate

    causes: list[tuple[str, str, str]] = []
    validate({"max": {"cpu": value}}, {"type": "object", "properties": {"max": {
        "type": "object", "additionalProperties": QUANTITY}}}, "spec", causes)
    assert [(c[0], c[1]) for c in causes] == [("FieldValueInvalid", "spec.max.cpu")]
    assert f'Invalid value: "{value}": spec.max.cpu in body should match' in causes[0][2]


@pytest.mark.parametrize("value", [2, "500m", "1.5Gi", "-4", "1e3"])
def test_int_or_string_accepts_quantities(value: int | str) -> None:
    from test.apiserver.crds import validate

    causes: list[tuple[str, str, str]] = []
    validate(value, QUANTITY, "spec.max.cpu", causes)
    assert causes == []
