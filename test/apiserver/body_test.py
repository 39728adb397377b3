"""Request bodies the server must refuse before admission (size, malformed JSON/YAML, invalid
UTF-8, non-objects, nesting it could not serve back), on every write path, with Kubernetes'
Status shape; and nothing refused is ever stored (lists and watches keep working)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from test.apiserver import ServerHandle
from test.apiserver.body import MAX_BODY_BYTES, MAX_DEPTH
from test.apiserver.testing import expect_status, http_request, minimal_pod, serving_open_crd

GROUP = "deep.example.com"
PODS = "/api/v1/namespaces/default/pods"
BLOBS = f"/apis/{GROUP}/v1/namespaces/default/blobs"


@pytest.fixture(scope="module")
def srv() -> Iterator[ServerHandle]:
    yield from serving_open_crd(GROUP, "Blob", "blobs")


def nested(depth: int) -> bytes:
    """JSON of an object ``depth`` levels deep (counting itself); built as text, as orjson
    cannot encode past 255 levels."""
    return b'{"x":' * (depth - 1) + b"{}" + b"}" * (depth - 1)


def with_extra(obj: dict[str, Any], depth: int) -> bytes:
    """``obj`` with an "extra" field ``depth`` levels deep."""
    return orjson.dumps(obj)[:-1] + b',"extra":' + nested(depth) + b"}"


def pod(name: str) -> dict[str, Any]:
    return minimal_pod(name)


def blob(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Blob", "metadata": {"name": name}}


def lists_and_watches(srv: Any, path: str) -> list[str]:
    """Names listed at ``path``, after checking that a watch of it still starts."""
    code, body = http_request(srv, "GET", path)
    assert code == 200, body
    code, stream = http_request(srv, "GET", path + "?watch=1&timeoutSeconds=1")
    assert code == 200 and b'"ERROR"' not in (stream if isinstance(stream, bytes)
                                               else json.dumps(stream).encode())
    return [i["metadata"]["name"] for i in body["items"]]


def test_body_over_3mib_is_413_before_anything(srv):
    big = pod("big")
    big["metadata"]["annotations"] = {"a": "x" * MAX_BODY_BYTES}
    for method, path, ctype in (("POST", PODS, "application/json"),
                                ("PUT", f"{PODS}/big", "application/json"),
                                ("PATCH", f"{PODS}/big", "application/merge-patch+json")):
        code, body = http_request(srv, method, path, orjson.dumps(big), ctype)
        assert expect_status(body, 413, "RequestEntityTooLarge") == \
            "Request entity too large: limit is 3145728", method
    # Without a Content-Length the server stops reading at the limit.
    code, body = http_request(srv, "POST", PODS, orjson.dumps(big), chunked=True)
    assert expect_status(body, 413, "RequestEntityTooLarge")
    code, body = http_request(srv, "POST", PODS, orjson.dumps(pod("small-chunks")),
                              chunked=True)
    assert code == 201, body
    assert "big" not in lists_and_watches(srv, PODS)


@pytest.mark.parametrize(("raw", "ctype", "want"), [
    (b'{"apiVersion": "v1", "kind": "Pod", "metadata": {', "application/json",
     "json parse error: unexpected end of data"),
    (b'{"kind": "Pod", "metadata": {"name": "\xff\xfe"}}', "application/json", "UTF-8"),
    (b"[1, 2]", "application/json", "cannot unmarshal array into Go value"),
    (b'"a string"', "application/json", "cannot unmarshal string into Go value"),
    (b"kind: Pod\nmetadata: {name: [unclosed\n", "application/yaml",
     "error converting YAML to JSON"),
    (b"- just\n- a list\n", "application/yaml", "cannot unmarshal array"),
    (b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\n"
     b"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e]\n"
     b"g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n",
     "application/yaml", "excessive aliasing"),
])
def test_undecodable_create_is_400_naming_the_problem(srv, raw, ctype, want):
    code, body = http_request(srv, "POST", PODS, raw, ctype)
    msg = expect_status(body, 400, "BadRequest")
    assert "the object provided is unrecognized (must be of type Pod)" in msg
    assert want in msg


@pytest.mark.parametrize("path,make", [(PODS, pod), (BLOBS, blob)])
def test_too_deep_create_is_refused_and_nothing_is_stored(srv, path, make):
    # What the decoder reads (up to 1,000 levels) is 422 naming the object and the field,
    # before admission; deeper than the decoder reads is 400.
    for depth in (MAX_DEPTH + 1, 300, 900):
        name = f"deep-{depth}"
        code, body = http_request(srv, "POST", path,
                                  with_extra(make(name), depth))
        assert f'"{name}" is invalid: extra: Invalid value: "object": nested more than ' \
            f"{MAX_DEPTH} levels deep" in expect_status(body, 422, "Invalid")
        assert name not in lists_and_watches(srv, path)
    # 100,000 levels (a 600 KB body) crashed the server inside the JSON parser: measured and
    # refused before parsing.
    for depth in (2000, 100_000):
        name = f"deep-{depth}"
        code, body = http_request(srv, "POST", path, with_extra(make(name), depth))
        assert "json parse error: nested more than 1000 levels deep" in \
            expect_status(body, 400, "BadRequest")
        assert name not in lists_and_watches(srv, path)
    # YAML bodies (and kubectl's server-side apply) are held to the same limit.
    code, body = http_request(srv, "POST", path, with_extra(make("deep-yaml"), 400),
                              "application/yaml")
    assert '"deep-yaml" is invalid: extra: Invalid value: "object": nested more than' in \
        expect_status(body, 422, "Invalid")
    code, body = http_request(srv, "PATCH", f"{path}/deep-apply?fieldManager=t",
                              with_extra(make("deep-apply"), 400),
                              "application/apply-patch+yaml")
    assert "nested more than" in expect_status(body, 400, "BadRequest")
    assert "deep-apply" not in lists_and_watches(srv, path)


@pytest.mark.parametrize("path,make", [(PODS, pod), (BLOBS, blob)])
def test_deepest_allowed_object_is_served_back(srv, path, make):
    # The object itself is one level, "extra" adds the rest.
    code, body = http_request(srv, "POST", path, with_extra(make("deepest"), MAX_DEPTH - 1))
    assert code == 201, body
    assert "deepest" in lists_and_watches(srv, path)
    code, body = http_request(srv, "DELETE", f"{path}/deepest?gracePeriodSeconds=0")
    assert code == 200, body


@pytest.mark.parametrize("path,make", [(PODS, pod), (BLOBS, blob)])
def test_updates_and_patches_that_nest_too_deep_leave_the_object_alone(srv, path, make):
    code, before = http_request(srv, "POST", path, orjson.dumps(make("victim")))
    assert code == 201, before
    url = f"{path}/victim"
    too_deep = with_extra(make("victim"), MAX_DEPTH + 5)
    # PUT of the object and of its status subresource: refused after decoding, naming the
    # object and the field (422).
    for sub in ("", "/status"):
        code, body = http_request(srv, "PUT", url + sub, too_deep)
        assert '"victim" is invalid: extra: Invalid value: "object": nested more than' in \
            expect_status(body, 422, "Invalid")
    # Patch bodies: refused while decoding (400).
    for ctype, patch in (
            ("application/merge-patch+json", b'{"extra":' + nested(MAX_DEPTH + 5) + b"}"),
            ("application/json-patch+json",
             b'[{"op":"add","path":"/extra","value":' + nested(MAX_DEPTH + 5) + b"}]")):
        code, body = http_request(srv, "PATCH", url, patch, ctype)
        assert "error decoding patch: nested more than" in expect_status(body, 400, "BadRequest")
    # A patch within the limit whose result is not: 422 naming the object and the field.
    code, patched = http_request(srv, "PATCH", url, b'{"extra":' + nested(150) + b"}",
                                 "application/merge-patch+json")
    assert code == 200
    deeper = (b'[{"op":"add","path":"/extra' + b"/x" * 148 + b'/y","value":' + nested(150) +
              b"}]")
    for sub in ("", "/status"):
        code, body = http_request(srv, "PATCH", url + sub, deeper, "application/json-patch+json")
        msg = expect_status(body, 422, "Invalid")
        assert f'"victim" is invalid: extra: Invalid value: "object": nested more than ' \
            f"{MAX_DEPTH} levels deep" in msg
        assert body["details"]["causes"][0]["field"] == "extra"
    code, after = http_request(srv, "GET", url)
    assert code == 200 and '"y"' not in json.dumps(after)
    assert after["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert "victim" in lists_and_watches(srv, path)


def test_subresource_and_delete_bodies_are_decoded_the_same_way(srv):
    code, _ = http_request(srv, "POST", PODS, orjson.dumps(pod("bindme")))
    assert code == 201
    code, body = http_request(srv, "POST", f"{PODS}/bindme/binding", b"{not json")
    assert "must be of type Binding" in expect_status(body, 400, "BadRequest")
    code, body = http_request(srv, "POST", f"{PODS}/bindme/eviction", b"[]")
    assert "must be of type Eviction" in expect_status(body, 400, "BadRequest")
    code, body = http_request(srv, "DELETE", f"{PODS}/bindme", b"{oops")
    assert "must be of type DeleteOptions" in expect_status(body, 400, "BadRequest")
    deploys = "/apis/apps/v1/namespaces/default/deployments"
    code, _ = http_request(srv, "POST", deploys, orjson.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
    assert code == 201
    code, body = http_request(srv, "PATCH", f"{deploys}/d/scale", b"{",
                              "application/merge-patch+json")
    assert "error decoding patch" in expect_status(body, 400, "BadRequest")
    assert "bindme" in lists_and_watches(srv, PODS)


def test_binding_annotations_must_be_strings(srv):
    code, _ = http_request(srv, "POST", PODS, orjson.dumps(pod("bind-ann")))
    assert code == 201
    binding = {"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": "bind-ann", "annotations": {"a": {"nested": "map"}}},
               "target": {"kind": "Node", "name": "n1"}}
    code, body = http_request(srv, "POST", f"{PODS}/bind-ann/binding", orjson.dumps(binding))
    assert "cannot be handled as a Binding" in expect_status(body, 400, "BadRequest")
    code, got = http_request(srv, "GET", f"{PODS}/bind-ann")
    assert "nodeName" not in got["spec"] and "a" not in got["metadata"].get("annotations", {})


@pytest.mark.parametrize(("method", "path", "raw", "ctype", "code", "want"), [
    ("POST", PODS, b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t1"}, '
     b'"spec": "x"}', None, 400, 'Pod in version "v1" cannot be handled as a Pod'),
    ("POST", PODS, b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t2"}, '
     b'"spec": {"containers": [1]}}', None, 400, "cannot be handled as a Pod"),
    ("PATCH", f"{PODS}/typed", b'{"spec": {"containers": "x"}}',
     "application/strategic-merge-patch+json", 400, "cannot be handled as a Pod"),
    ("POST", f"{PODS}/typed/binding", b'{"apiVersion": "v1", "kind": "Binding", '
     b'"metadata": {"name": "typed"}, "target": "x"}', None, 400,
     "cannot unmarshal string into Go struct field Binding.target"),
    ("POST", f"{PODS}/typed/eviction", b'{"apiVersion": "policy/v1", "kind": "Eviction", '
     b'"metadata": {"name": "typed"}, "deleteOptions": 5}', None, 400,
     "cannot unmarshal number into Go struct field Eviction.deleteOptions"),
    ("DELETE", f"{PODS}/typed?gracePeriodSeconds=abc", b"", None, 400,
     'invalid value for gracePeriodSeconds: strconv.ParseInt: parsing "abc"'),
    ("GET", f"{PODS}?watch=1&timeoutSeconds=abc", b"", None, 400,
     "invalid value for timeoutSeconds"),
])
def test_fields_of_the_wrong_type_are_400_not_500(srv, method, path, raw, ctype, code, want):
    http_request(srv, "POST", PODS, orjson.dumps(pod("typed")))
    got, body = http_request(srv, method, path, raw, ctype or "application/json")
    assert want in expect_status(body, code, "BadRequest")
    code, typed = http_request(srv, "GET", f"{PODS}/typed")
    assert code == 200 and "nodeName" not in typed["spec"]
    assert isinstance(typed["spec"]["containers"], list)


@pytest.mark.parametrize("options", [{"gracePeriodSeconds": "x"}, {"preconditions": "x"},
                                     {"preconditions": {"uid": 5}}, {"dryRun": "All"}])
def test_delete_options_of_the_wrong_type_are_400(srv, options):
    http_request(srv, "POST", PODS, orjson.dumps(pod("del-opts")))
    body_ = orjson.dumps({"apiVersion": "v1", "kind": "DeleteOptions", **options})
    code, body = http_request(srv, "DELETE", f"{PODS}/del-opts", body_)
    assert "into Go struct field DeleteOptions." in expect_status(body, 400, "BadRequest")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": "del-opts"}, "deleteOptions": options}
    code, body = http_request(srv, "POST", f"{PODS}/del-opts/eviction", orjson.dumps(eviction))
    assert "into Go struct field DeleteOptions." in expect_status(body, 400, "BadRequest")
    assert http_request(srv, "GET", f"{PODS}/del-opts")[0] == 200


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_in_an_unknown_format_is_415(srv, ctype):
    code, body = http_request(srv, "POST", PODS, orjson.dumps(pod("plain")), ctype)
    msg = expect_status(body, 415, "UnsupportedMediaType")
    assert "accepted media types include: application/json, application/yaml" in msg
    assert "plain" not in lists_and_watches(srv, PODS)


def test_a_body_without_content_type_is_read_as_json(srv):
    code, body = http_request(srv, "POST", PODS, orjson.dumps(pod("no-ctype")), "")
    assert code == 201, body


@pytest.mark.parametrize("kind,path,field,value", [
    ("ConfigMap", "/api/v1/namespaces/default/configmaps", "data", {"a": 5}),
    ("ConfigMap", "/api/v1/namespaces/default/configmaps", "binaryData", {"a": True}),
    ("Secret", "/api/v1/namespaces/default/secrets", "stringData", {"a": ["x"]}),
])
def test_typed_fields_of_the_wrong_json_type_are_400_as_gos_decoder_says(srv, kind, path, field,
                                                                         value):
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "typed"}, field: value}
    code, body = http_request(srv, "POST", path, orjson.dumps(obj))
    msg = expect_status(body, 400, "BadRequest")
    assert f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal' in msg
    assert f"into Go struct field {kind}.{field} of type string" in msg
    assert "typed" not in lists_and_watches(srv, path)
