"""Decoding the Kubernetes protobuf encoding of the objects kubectl's generators send.

kubectl's imperative commands (``create namespace|configmap|secret|serviceaccount|deployment|
priorityclass|token``, ``run``, ``auth can-i|whoami``) post bodies as
``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` magic, a ``runtime.Unknown`` envelope,
and the object in the wire format of upstream's ``k8s.io/api/*/generated.proto``. This module
maps the field numbers of those messages, for the kinds and fields those commands produce, to
the JSON form; fields it does not know are dropped. Other kinds answer 415 and clients fall
back to nothing: use JSON or YAML (``kubectl create -f``, ``kubectl apply``), which everything
else already does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from . import errors

MAGIC = b"k8s\x00"

# A message schema: field number -> (json name, type, repeated). Types: "string", "bytes",
# "int", "bool", "time", "quantity", "intorstr", a schema dict (message), or
# ("map", value type).
Schema = dict[int, tuple[str, Any, bool]]


def _f(name: str, typ: Any, repeated: bool = False) -> tuple[str, Any, bool]:
    return (name, typ, repeated)


OWNER_REF: Schema = {1: _f("kind", "string"), 3: _f("name", "string"), 4: _f("uid", "string"),
                     5: _f("apiVersion", "string"), 6: _f("controller", "bool"),
                     7: _f("blockOwnerDeletion", "bool")}
OBJECT_META: Schema = {
    1: _f("name", "string"), 2: _f("generateName", "string"), 3: _f("namespace", "string"),
    5: _f("uid", "string"), 6: _f("resourceVersion", "string"), 7: _f("generation", "int"),
    8: _f("creationTimestamp", "time"), 11: _f("labels", ("map", "string")),
    12: _f("annotations", ("map", "string")), 13: _f("ownerReferences", OWNER_REF, True),
    14: _f("finalizers", "string", True),
}
LABEL_SELECTOR: Schema = {
    1: _f("matchLabels", ("map", "string")),
    2: _f("matchExpressions", {1: _f("key", "string"), 2: _f("operator", "string"),
                               3: _f("values", "string", True)}, True),
}
CONTAINER: Schema = {
    1: _f("name", "string"), 2: _f("image", "string"), 3: _f("command", "string", True),
    4: _f("args", "string", True), 5: _f("workingDir", "string"),
    6: _f("ports", {1: _f("name", "string"), 2: _f("hostPort", "int"),
                    3: _f("containerPort", "int"), 4: _f("protocol", "string"),
                    5: _f("hostIP", "string")}, True),
    7: _f("env", {1: _f("name", "string"), 2: _f("value", "string")}, True),
    8: _f("resources", {1: _f("limits", ("map", "quantity")),
                        2: _f("requests", ("map", "quantity"))}),
    14: _f("imagePullPolicy", "string"), 16: _f("stdin", "bool"),
    17: _f("stdinOnce", "bool"), 18: _f("tty", "bool"),
}
POD_SPEC: Schema = {
    2: _f("containers", CONTAINER, True), 3: _f("restartPolicy", "string"),
    4: _f("terminationGracePeriodSeconds", "int"), 6: _f("dnsPolicy", "string"),
    7: _f("nodeSelector", ("map", "string")), 8: _f("serviceAccountName", "string"),
    10: _f("nodeName", "string"), 11: _f("hostNetwork", "bool"),
    15: _f("imagePullSecrets", {1: _f("name", "string")}, True),
    19: _f("schedulerName", "string"), 20: _f("initContainers", CONTAINER, True),
    24: _f("priorityClassName", "string"),
}
POD_TEMPLATE: Schema = {1: _f("metadata", OBJECT_META), 2: _f("spec", POD_SPEC)}
INT_OR_STRING: Schema = {1: _f("type", "int"), 2: _f("intVal", "int"),
                         3: _f("strVal", "string")}

# SelfSubjectAccessReviewSpec is SubjectAccessReviewSpec's first two fields.
ACCESS_REVIEW_SPEC: Schema = {
    1: _f("resourceAttributes", {
        1: _f("namespace", "string"), 2: _f("verb", "string"), 3: _f("group", "string"),
        4: _f("version", "string"), 5: _f("resource", "string"),
        6: _f("subresource", "string"), 7: _f("name", "string")}),
    2: _f("nonResourceAttributes", {1: _f("path", "string"), 2: _f("verb", "string")}),
    3: _f("user", "string"), 4: _f("groups", "string", True), 6: _f("uid", "string"),
}

KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {1: _f("metadata", OBJECT_META),
                          2: _f("spec", {1: _f("finalizers", "string", True)})},
    ("v1", "ConfigMap"): {1: _f("metadata", OBJECT_META), 2: _f("data", ("map", "string")),
                          3: _f("binaryData", ("map", "bytes")), 4: _f("immutable", "bool")},
    ("v1", "Secret"): {1: _f("metadata", OBJECT_META), 2: _f("data", ("map", "bytes")),
                       3: _f("type", "string"), 4: _f("stringData", ("map", "string")),
                       5: _f("immutable", "bool")},
    ("v1", "ServiceAccount"): {1: _f("metadata", OBJECT_META),
                               3: _f("imagePullSecrets", {1: _f("name", "string")}, True),
                               4: _f("automountServiceAccountToken", "bool")},
    ("v1", "Pod"): {1: _f("metadata", OBJECT_META), 2: _f("spec", POD_SPEC)},
    ("apps/v1", "Deployment"): {1: _f("metadata", OBJECT_META), 2: _f("spec", {
        1: _f("replicas", "int"), 2: _f("selector", LABEL_SELECTOR),
        3: _f("template", POD_TEMPLATE),
        4: _f("strategy", {1: _f("type", "string"), 2: _f("rollingUpdate", {
            1: _f("maxUnavailable", "intorstr"), 2: _f("maxSurge", "intorstr")})}),
        5: _f("minReadySeconds", "int"), 6: _f("revisionHistoryLimit", "int"),
        7: _f("paused", "bool"), 9: _f("progressDeadlineSeconds", "int")})},
    # kubectl create token
    ("authentication.k8s.io/v1", "TokenRequest"): {1: _f("metadata", OBJECT_META), 2: _f("spec", {
        1: _f("audiences", "string", True), 4: _f("expirationSeconds", "int"),
        3: _f("boundObjectRef", {1: _f("kind", "string"), 2: _f("apiVersion", "string"),
                                 3: _f("name", "string"), 4: _f("uid", "string")})})},
    # kubectl auth can-i, kubectl auth whoami
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: _f("metadata", OBJECT_META), 2: _f("spec", ACCESS_REVIEW_SPEC)},
    ("authorization.k8s.io/v1", "SubjectAccessReview"): {
        1: _f("metadata", OBJECT_META), 2: _f("spec", ACCESS_REVIEW_SPEC)},
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): {
        1: _f("metadata", OBJECT_META), 2: _f("spec", ACCESS_REVIEW_SPEC)},
    ("authentication.k8s.io/v1", "SelfSubjectReview"): {1: _f("metadata", OBJECT_META)},
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): {
        1: _f("metadata", OBJECT_META), 2: _f("spec", {1: _f("namespace", "string")})},
    ("scheduling.k8s.io/v1", "PriorityClass"): {
        1: _f("metadata", OBJECT_META), 2: _f("value", "int"), 3: _f("globalDefault", "bool"),
        4: _f("description", "string"), 5: _f("preemptionPolicy", "string")},
}


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples of one message."""
    out = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        v: int | bytes
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wt}")
        out.append((num, wt, v))
    return out


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _scalar(typ: Any, wt: int, v: Any) -> Any:
    if typ == "string":
        return bytes(v).decode()
    if typ == "bytes":
        import base64

        return base64.b64encode(bytes(v)).decode()
    if typ == "int":
        return _signed(v)
    if typ == "bool":
        return bool(v)
    if typ == "time":
        secs = 0
        for num, _, x in fields(v):
            if num == 1:
                secs = _signed(x)
        if secs == 0:
            return None
        return datetime.fromtimestamp(secs, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if typ == "quantity":
        return next((bytes(x).decode() for num, _, x in fields(v) if num == 1), "0")
    if typ == "intorstr":
        d = decode_message(v, INT_OR_STRING)
        return d.get("strVal", "") if d.get("type") == 1 else d.get("intVal", 0)
    if isinstance(typ, dict):
        return decode_message(v, typ)
    raise ValueError(f"unknown type {typ!r}")


def decode_message(buf: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for num, wt, v in fields(buf):
        spec = schema.get(num)
        if spec is None:
            continue
        name, typ, repeated = spec
        if isinstance(typ, tuple) and typ[0] == "map":
            key = val = None
            for n2, w2, v2 in fields(v):
                if n2 == 1:
                    key = bytes(v2).decode()
                elif n2 == 2:
                    val = _scalar(typ[1], w2, v2)
            if key is not None:
                out.setdefault(name, {})[key] = val if val is not None else (
                    "" if typ[1] in ("string", "bytes") else val)
            continue
        value = _scalar(typ, wt, v)
        if repeated:
            out.setdefault(name, []).append(value)
        elif value not in ("", None, False):
            out[name] = value
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A ``application/vnd.kubernetes.protobuf`` body as a JSON-style object."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("protobuf body does not start with the k8s magic number")
    try:
        env = {num: v for num, _, v in fields(body[len(MAGIC):])}
        tm = {num: bytes(v).decode() for num, _, v in fields(env.get(1, b""))}
        api_version, kind = tm.get(1, ""), tm.get(2, "")
        schema = KINDS.get((api_version, kind))
        if schema is None:
            raise errors.ApiError(
                415, "UnsupportedMediaType",
                f"the body of the request was in an unknown format - protobuf is only "
                f"understood for {sorted(k for _, k in KINDS)}; {kind} must be sent as "
                "application/json or application/yaml")
        obj = decode_message(env.get(2, b""), schema)
    except ValueError as e:
        raise errors.bad_request(f"malformed protobuf body: {e}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
