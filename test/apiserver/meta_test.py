"""ObjectMeta validation as kube-apiserver's ValidateObjectMeta: names per resource,
generateName, label keys and values, annotation keys and total size, finalizers; on create,
update and patch, for built-in and custom resources, with upstream's messages and causes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from test.apiserver import ServerHandle
from test.apiserver.testing import expect_status, http_request, minimal_pod, serving_open_crd

GROUP = "meta.example.com"
PODS = "/api/v1/namespaces/default/pods"
BLOBS = f"/apis/{GROUP}/v1/namespaces/default/blobs"

LABEL_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    yield from serving_open_crd(GROUP, "Blob", "blobs")


def pod(name: str) -> dict[str, Any]:
    return minimal_pod(name)


def blob(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Blob", "metadata": {"name": name}}


def with_meta(obj: dict[str, Any], **meta: Any) -> bytes:
    obj["metadata"].update(meta)
    return orjson.dumps(obj)


def invalid(body: Any) -> tuple[str, list[tuple[str, str]]]:
    """The 422 message and its causes as (field, message)."""
    msg = expect_status(body, 422, "Invalid")
    return msg, [(c["field"], c["message"]) for c in body["details"]["causes"]]


def test_label_value_with_a_space_is_invalid_with_upstreams_message(srv):
    code, body = http_request(srv, "POST", PODS,
                              with_meta(pod("x"), labels={"ok": "has space!"}))
    msg, causes = invalid(body)
    assert msg == f'Pod "x" is invalid: metadata.labels: Invalid value: "has space!": {LABEL_MSG}'
    assert causes == [("metadata.labels", f'Invalid value: "has space!": {LABEL_MSG}')]
    assert body["details"]["name"] == "x" and body["details"]["kind"] == "Pod"


@pytest.mark.parametrize(("labels", "want"), [
    ({"a/b/c": "v"}, "a qualified name must consist of"),
    ({"-bad": "v"}, "name part must consist of alphanumeric characters"),
    ({"/x": "v"}, "prefix part must be non-empty"),
    ({"Bad_Prefix/x": "v"}, "prefix part a lowercase RFC 1123 subdomain"),
    ({"k" * 64: "v"}, "name part must be no more than 63 characters"),
    ({"k": "v" * 64}, "must be no more than 63 characters"),
    ({"k": "web\n"}, LABEL_MSG),
    ({"app\n": "v"}, "name part must consist of alphanumeric characters"),
])
def test_bad_label_keys_and_values(srv, labels, want):
    code, body = http_request(srv, "POST", PODS, with_meta(pod("labels"), labels=labels))
    msg, causes = invalid(body)
    assert want in msg and causes[0][0] == "metadata.labels"


def test_good_metadata_is_accepted(srv):
    code, body = http_request(srv, "POST", PODS, with_meta(
        pod("good"), labels={"example.com/My_Key.1": "", "k": "V-1.2_3"},
        annotations={"Example.COM/Upper": "any value at all", "a": "x" * 200_000},
        finalizers=["example.com/keep"]))
    assert code == 201, body


def test_annotations_over_256kib_in_total_are_too_long(srv):
    huge = "x" * (1536 * 1024)  # 1.5 MiB: under the body limit, over the annotation limit
    code, body = http_request(srv, "POST", PODS, with_meta(pod("ann"), annotations={"a": huge}))
    msg, causes = invalid(body)
    assert msg == 'Pod "ann" is invalid: metadata.annotations: Too long: must have at most ' \
        "262144 bytes"
    assert causes == [("metadata.annotations", "Too long: must have at most 262144 bytes")]
    # The limit counts keys and values together, in bytes.
    code, body = http_request(srv, "POST", PODS, with_meta(
        pod("ann2"), annotations={"a": "é" * 70_000, "b": "x" * 130_000}))
    assert "Too long" in invalid(body)[0]
    code, body = http_request(srv, "POST", PODS, with_meta(pod("ann3"),
                                                           annotations={"bad key": "v"}))
    assert invalid(body)[1][0][0] == "metadata.annotations"


def test_a_name_ending_in_a_newline_is_invalid_and_quoted_as_go_does(srv):
    """Go's regexp '$' does not match before a final newline; nothing is stored."""
    code, body = http_request(srv, "POST", PODS, orjson.dumps(pod("web\n")))
    msg, causes = invalid(body)
    assert causes[0][0] == "metadata.name"
    assert causes[0][1].startswith('Invalid value: "web\\n": a lowercase RFC 1123 subdomain')
    code, body = http_request(srv, "GET", PODS)
    assert [p["metadata"]["name"] for p in body["items"] if "web" in p["metadata"]["name"]] == []


@pytest.mark.parametrize(("path", "name", "want"), [
    (PODS, "Upper", "a lowercase RFC 1123 subdomain must consist of"),
    (PODS, "n" * 254, "must be no more than 253 characters"),
    ("/api/v1/namespaces", "a.b", "must not contain dots"),
    ("/api/v1/namespaces", "n" * 64, "must be no more than 63 characters"),
    ("/api/v1/namespaces/default/services", "1svc", "a DNS-1035 label must consist of"),
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "..", "may not be '..'"),
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles", "a%b", "may not contain '%'"),
    (BLOBS, "Not_A_Subdomain", "a lowercase RFC 1123 subdomain must consist of"),
])
def test_names_follow_each_resources_rule(srv, path, name, want):
    kind = {"namespaces": "Namespace", "services": "Service", "clusterroles": "ClusterRole",
            "pods": "Pod", "blobs": "Blob"}[path.rsplit("/", 1)[1]]
    group = path.split("/")[2] + "/" + path.split("/")[3] if path.startswith("/apis/") else "v1"
    obj = pod(name) if kind == "Pod" else blob(name) if kind == "Blob" else {
        "apiVersion": group, "kind": kind, "metadata": {"name": name}}
    code, body = http_request(srv, "POST", path, orjson.dumps(obj))
    msg, causes = invalid(body)
    assert want in msg and causes[0][0] == "metadata.name", msg
    assert f'Invalid value: "{name}"' in causes[0][1]
    # RBAC names are path segments: anything else goes.
    if kind == "ClusterRole":
        code, body = http_request(srv, "POST", path, orjson.dumps(
            {"apiVersion": group, "kind": kind, "metadata": {"name": f"system:Odd_{len(name)}"}}))
        assert code == 201, body


def test_generate_name_prefix_is_validated(srv):
    code, body = http_request(srv, "POST", PODS, with_meta(pod(""), generateName="Bad_"))
    msg, causes = invalid(body)
    assert ("metadata.generateName",
            'Invalid value: "Bad_": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')") in causes
    # A trailing dash is how prefixes end: fine.
    code, body = http_request(srv, "POST", PODS, with_meta(pod(""), generateName="web-"))
    assert code == 201 and body["metadata"]["name"].startswith("web-")


def test_bad_finalizer_is_invalid(srv):
    code, body = http_request(srv, "POST", PODS, with_meta(pod("fin"), finalizers=["a/b/c"]))
    assert invalid(body)[1][0][0] == "metadata.finalizers"


@pytest.mark.parametrize(("path", "make", "kind"), [(PODS, pod, "Pod"), (BLOBS, blob, "Blob")])
def test_update_and_patches_are_validated_and_leave_the_object_alone(srv, path, make, kind):
    code, before = http_request(srv, "POST", path, orjson.dumps(make("keep")))
    assert code == 201, before
    url = f"{path}/keep"
    bad = dict(before)
    bad["metadata"] = dict(before["metadata"], labels={"x": "has space!"})
    code, body = http_request(srv, "PUT", url, orjson.dumps(bad))
    assert invalid(body)[0].startswith(f'{kind}{f".{GROUP}" if kind == "Blob" else ""} '
                                       f'"keep" is invalid: metadata.labels')
    patches = [("application/merge-patch+json",
                {"metadata": {"annotations": {"a": "x" * 300_000}}}),
               ("application/json-patch+json",
                [{"op": "add", "path": "/metadata/labels", "value": {"bad key": "v"}}])]
    if kind == "Pod":
        patches.append(("application/strategic-merge-patch+json",
                        {"metadata": {"labels": {"x": "-"}}}))
    for ctype, patch in patches:
        code, body = http_request(srv, "PATCH", url, orjson.dumps(patch), ctype)
        assert invalid(body)[1][0][0].startswith("metadata."), ctype
    # Built-in status updates may change labels: validated too.
    if kind == "Pod":
        code, body = http_request(srv, "PUT", url + "/status", orjson.dumps(bad))
        assert invalid(body)[1][0][0] == "metadata.labels"
    code, after = http_request(srv, "GET", url)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("meta", "want"), [
    ({"name": 5}, "cannot unmarshal number into Go struct field ObjectMeta.metadata.name of "
     "type string"),
    ({"generateName": 7}, "ObjectMeta.metadata.generateName of type string"),
    ({"name": "f", "finalizers": "x"}, "cannot unmarshal string into Go struct field "
     "ObjectMeta.metadata.finalizers of type []string"),
    ({"name": "l", "labels": {"a": 1}}, "cannot unmarshal number into Go struct field "
     "ObjectMeta.metadata.labels of type string"),
    ({"name": "g", "generation": "5"}, "ObjectMeta.metadata.generation of type int64"),
    ({"name": "o", "ownerReferences": ["x"]}, "of type v1.OwnerReference"),
])
def test_metadata_of_the_wrong_json_type_is_400_not_500(srv, meta, want):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    code, body = http_request(srv, "POST", "/api/v1/namespaces/default/configmaps",
                              orjson.dumps(cm))
    msg = expect_status(body, 400, "BadRequest")
    assert msg.startswith('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: ')
    assert want in msg
    # Patches that would store such a type are refused the same way.
    code, _ = http_request(srv, "POST", "/api/v1/namespaces/default/configmaps",
                           orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "typed"}}))
    code, body = http_request(srv, "PATCH", "/api/v1/namespaces/default/configmaps/typed",
                              orjson.dumps({"metadata": {"finalizers": "x"}}),
                              "application/merge-patch+json")
    assert "ObjectMeta.metadata.finalizers" in expect_status(body, 400, "BadRequest")
