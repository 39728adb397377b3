"""Strict structural check of built-in objects against the official client's models.

The embedded server keeps built-in kinds as JSON without their OpenAPI schemas, so a misspelt
field in a Deployment would be stored silently where kube-apiserver's ``fieldValidation=Strict``
rejects it (upstream: `k8s.io/apimachinery/pkg/runtime/serializer/json` strict decoding). The
official Python client's models (``kubernetes.client.V1Deployment``, ...) carry each field's JSON
name (``attribute_map``) and type (``openapi_types``); walking an object against them finds the
unknown fields and wrong primitive types, named by their JSON path as the real server does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import kubernetes.client

# The client writes `List[V1Container]` and `Dict[str, str]` (older releases `list[...]`,
# `dict(str, ...)`).
_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")
# Maps of resource quantities: the client types Quantity as str, the API server also accepts
# JSON numbers there (`cpu: 1`).
_QUANTITY_MAPS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used",
                            "overhead"})


class _Model:
    """What the walk reads of a generated client model class."""

    openapi_types: dict[str, str]
    attribute_map: dict[str, str]


def model_name(api_version: str, kind: str) -> str:
    """The client's class name for a kind: ``apps/v1`` ``Deployment`` -> ``V1Deployment``."""
    version = api_version.rsplit("/", 1)[-1]
    return version[:1].upper() + version[1:] + kind


def has_model(api_version: str, kind: str) -> bool:
    """Whether the official client has a model for this built-in kind."""
    return hasattr(kubernetes.client, model_name(api_version, kind))


@dataclass(slots=True)
class _Found:
    unknown: list[str] = field(default_factory=list)  # JSON paths
    wrong: list[str] = field(default_factory=list)  # "<path>: expected ..., got ..."


def _check(obj: Mapping[str, object]) -> _Found:
    found = _Found()
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    if has_model(api_version, kind):
        _walk(model_name(api_version, kind), obj, "", found)
    return found


def check_builtin(obj: Mapping[str, object]) -> list[str]:
    """Every unknown field and wrongly typed primitive of a built-in object, each as
    ``<Kind> <namespace/name>: <problem at JSON path>``; [] when it conforms or when the client
    has no model for its kind."""
    found = _check(obj)
    meta = obj.get("metadata")
    name = ""
    if isinstance(meta, Mapping):
        name = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
    problems = [f'unknown field "{p}"' for p in found.unknown] + found.wrong
    return [f"{obj.get('kind')} {name}: {p}" for p in problems]


def unknown_fields(obj: Mapping[str, object]) -> list[str]:
    """The JSON paths of the fields a built-in object's model does not declare, as
    kube-apiserver's strict decoding names them (``spec.template.spec.containers[0].foo``)."""
    return _check(obj).unknown


def _walk(type_name: str, value: object, path: str, found: _Found) -> None:
    if value is None:  # an explicit null is an omitted field
        return
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            found.wrong.append(_wrong(path, "array", value))
            return
        for i, item in enumerate(value):
            _walk(m.group(1), item, f"{path}[{i}]", found)
        return
    if m := _DICT.match(type_name):
        if not isinstance(value, Mapping):
            found.wrong.append(_wrong(path, "object", value))
            return
        item_type = m.group(1) or m.group(2)
        if item_type == "str" and path.rsplit(".", 1)[-1] in _QUANTITY_MAPS:
            item_type = "quantity"
        for key, item in value.items():
            _walk(item_type, item, f"{path}.{key}" if path else str(key), found)
        return
    if type_name in _PRIMITIVES:
        expected, ok = _PRIMITIVES[type_name]
        if not ok(value):
            found.wrong.append(_wrong(path, expected, value))
        return
    model: type[_Model] | None = getattr(kubernetes.client, type_name, None)
    if model is None:  # a type the client leaves opaque
        return
    if not isinstance(value, Mapping):
        found.wrong.append(_wrong(path, "object", value))
        return
    by_json = {json_name: model.openapi_types[attr]
               for attr, json_name in model.attribute_map.items()}
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in by_json:
            found.unknown.append(where)
        else:
            _walk(by_json[key], item, where, found)


def _wrong(path: str, expected: str, value: object) -> str:
    return f"{path}: expected {expected}, got {type(value).__name__} {value!r}"


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_PRIMITIVES = {
    "str": ("string", lambda v: isinstance(v, str)),
    "int": ("integer", _is_int),
    "float": ("number", _is_number),
    "bool": ("boolean", lambda v: isinstance(v, bool)),
    "datetime": ("string", lambda v: isinstance(v, str)),
    # base64 in JSON (Secret data)
    "bytes": ("string", lambda v: isinstance(v, str)),
    "quantity": ("quantity", lambda v: isinstance(v, str) or _is_number(v)),
    # IntOrString and RawExtension fields: any JSON value
    "object": ("any", lambda v: True),
}
