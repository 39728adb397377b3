"""ObjectMeta helpers: timestamps, UIDs, name generation and ObjectMeta validation.

Corresponds to upstream ``k8s.io/apiserver/pkg/registry/rest`` (``FillObjectMetaSystemFields``,
``names.SimpleNameGenerator``), ``k8s.io/apimachinery/pkg/api/validation/objectmeta.go``
(``ValidateObjectMeta``: names, generateName, labels, annotations, finalizers) and
``apimachinery/pkg/api/validation/path`` (``ValidatePathSegmentName``); the string checks
themselves are ``pkg.util.validation``'s.
"""

from __future__ import annotations

import functools
import random
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pkg.util.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    go_value,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
)

_GEN_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as upstream's utilrand: no vowels, no 0/1/3


def now_rfc3339(ts: float | None = None) -> str:
    """metav1.Time: RFC 3339 with second precision, UTC."""
    t = time.gmtime(time.time() if ts is None else ts)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)


def now_micro(ts: float | None = None) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    dt = datetime.fromtimestamp(time.time() if ts is None else ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    """``generateName`` prefix plus 5 random characters (prefix cut to fit 63 characters)."""
    if len(prefix) > 58:
        prefix = prefix[:58]
    return prefix + "".join(random.choices(_GEN_ALPHABET, k=5))


def safe_encode_string(s: str) -> str:
    """Each character mapped into the generateName alphabet, as upstream's
    ``rand.SafeEncodeString`` (how the pod-template-hash label is spelled)."""
    return "".join(_GEN_ALPHABET[ord(c) % len(_GEN_ALPHABET)] for c in s)


# (reason, field, message) of one metav1 StatusCause.
Cause = tuple[str, str, str]
# ValidateNameFunc: messages for a name, or for a generateName prefix when the flag is set.
NameFn = Callable[[str, bool], list[str]]


def _mask_trailing_dash(name: str) -> str:
    """A generateName prefix may end in '-': check it as if a letter followed."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    """path.ValidatePathSegmentName (RBAC objects)."""
    errs: list[str] = []
    if not prefix and name in (".", ".."):
        errs.append(f"may not be '{name}'")
    errs += [f"may not contain '{c}'" for c in "/%" if c in name]
    return errs


# ObjectMeta's fields that are not strings, as Go types (the rest of its known fields are).
_META_TYPES = {"labels": "map[string]string", "annotations": "map[string]string",
               "finalizers": "[]string", "generation": "int64",
               "deletionGracePeriodSeconds": "int64", "ownerReferences": "[]v1.OwnerReference",
               "managedFields": "[]v1.ManagedFieldsEntry"}
_STRING_FIELDS = frozenset(("name", "generateName", "namespace", "selfLink", "uid",
                            "resourceVersion", "creationTimestamp", "deletionTimestamp"))


def json_kind(v: Any) -> str:
    """The JSON type name Go's decoder reports ("cannot unmarshal number into ...")."""
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _fits(v: Any, go_type: str) -> bool:
    if go_type == "map[string]string":
        return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
    if go_type == "[]string":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
    if go_type == "int64":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, list) and all(isinstance(x, dict) for x in v)


def _type_error(struct: str, fields: dict[str, str], obj: dict[str, Any]) -> str | None:
    """Go's decoding error for the first of ``fields`` (name → Go type) holding the wrong JSON
    type in ``obj``, or None (null is every field's zero value)."""
    for k, go_type in fields.items():
        v = obj.get(k)
        if v is None or (isinstance(v, str) if go_type == "string" else _fits(v, go_type)):
            continue
        bad = v
        if isinstance(v, dict) and go_type.startswith("map"):
            bad = next(x for x in v.values() if not isinstance(x, str))
            go_type = "string"
        elif isinstance(v, list) and go_type.startswith("[]"):
            bad = next(x for x in v if not _fits([x], go_type))
            go_type = go_type[2:]
        return (f"json: cannot unmarshal {json_kind(bad)} into Go struct field {struct}.{k} of "
                f"type {go_type}")
    return None


_META_FIELDS = {**dict.fromkeys(_STRING_FIELDS, "string"), **_META_TYPES}


def meta_type_error(md: dict[str, Any]) -> str | None:
    """Go's decoding error for an ObjectMeta field of the wrong JSON type, or None."""
    return _type_error("ObjectMeta.metadata", _META_FIELDS, md)


# Top-level fields of built-in kinds whose values the server stores as they come but Go types
# strictly (a ConfigMap's data of numbers would be stored, then break every typed client);
# ``[]byte`` values travel as base64 strings, so they are strings here too.
_TYPED_FIELDS: dict[str, dict[str, str]] = {
    "ConfigMap": {"data": "map[string]string", "binaryData": "map[string]string"},
    "Secret": {"data": "map[string]string", "stringData": "map[string]string",
               "type": "string"},
}


def field_type_error(kind: str, obj: dict[str, Any]) -> str | None:
    """Go's decoding error for a typed top-level field of ``kind`` of the wrong JSON type."""
    return _type_error(kind, _TYPED_FIELDS.get(kind, {}), obj)


def _invalid(fld: str, value: str, msg: str) -> Cause:
    return ("FieldValueInvalid", fld, f"Invalid value: {go_value(value)}: {msg}")


def validate_object_meta(md: dict[str, Any], name_fn: NameFn) -> list[Cause]:
    """ValidateObjectMetaAccessor's checks of names, labels, annotations and finalizers."""
    causes: list[Cause] = []
    gen = md.get("generateName")
    if gen:
        causes += [_invalid("metadata.generateName", gen, m) for m in name_fn(gen, True)]
    name = md.get("name") or ""
    if not name:
        causes.append(("FieldValueRequired", "metadata.name",
                       "Required value: name or generateName is required"))
    else:
        causes += [_invalid("metadata.name", name, m) for m in name_fn(name, False)]
    for k, v in (md.get("labels") or {}).items():
        if _key_errors(k):
            causes += [_invalid("metadata.labels", k, m) for m in _key_errors(k)]
        causes += [_invalid("metadata.labels", v, m) for m in is_valid_label_value(v)]
    annotations = md.get("annotations") or {}
    size = 0
    for k, v in annotations.items():
        if _key_errors(k.lower()):
            causes += [_invalid("metadata.annotations", k, m) for m in _key_errors(k.lower())]
        size += len(k) + len(v)
    # Characters are at most 4 bytes: encode only when the count could matter.
    if size * 4 > TOTAL_ANNOTATION_SIZE_LIMIT:
        size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(("FieldValueTooLong", "metadata.annotations",
                       f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"))
    for i, f in enumerate(md.get("finalizers") or []):
        if not isinstance(f, str):
            causes.append(("FieldValueInvalid", f"metadata.finalizers[{i}]",
                           "Invalid value: finalizers must be strings"))
            continue
        causes += [_invalid("metadata.finalizers", f, m) for m in _key_errors(f)]
    return causes


# Label and annotation keys repeat across objects: remember their (usually empty) verdicts.
@functools.lru_cache(maxsize=4096)
def _key_errors(key: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(key))


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
