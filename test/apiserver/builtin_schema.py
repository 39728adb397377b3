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


def check_builtin(obj: Mapping[str, object]) -> list[str]:
    """Every unknown field and wrongly typed primitive of a built-in object, each as
    ``<Kind> <namespace/name>: <problem at JSON path>``; [] when it conforms or when the client
    has no model for its kind."""
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    if not has_model(api_version, kind):
        return []
    meta = obj.get("metadata")
    name = ""
    if isinstance(meta, Mapping):
        name = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
    problems: list[str] = []
    _walk(model_name(api_version, kind), obj, "", problems)
    return [f"{kind} {name}: {p}" for p in problems]


def _walk(type_name: str, value: object, path: str, problems: list[str]) -> None:
    if value is None:  # an explicit null is an omitted field
        return
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            problems.append(_wrong(path, "array", value))
            return
        for i, item in enumerate(value):
            _walk(m.group(1), item, f"{path}[{i}]", problems)
        return
    if m := _DICT.match(type_name):
        if not isinstance(value, Mapping):
            problems.append(_wrong(path, "object", value))
            return
        item_type = m.group(1) or m.group(2)
        if item_type == "str" and path.rsplit(".", 1)[-1] in _QUANTITY_MAPS:
            item_type = "quantity"
        for key, item in value.items():
            _walk(item_type, item, f"{path}.{key}" if path else str(key), problems)
        return
    if type_name in _PRIMITIVES:
        expected, ok = _PRIMITIVES[type_name]
        if not ok(value):
            problems.append(_wrong(path, expected, value))
        return
    model: type[_Model] | None = getattr(kubernetes.client, type_name, None)
    if model is None:  # a type the client leaves opaque
        return
    if not isinstance(value, Mapping):
        problems.append(_wrong(path, "object", value))
        return
    by_json = {json_name: model.openapi_types[attr]
               for attr, json_name in model.attribute_map.items()}
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in by_json:
            problems.append(f'unknown field "{where}"')
        else:
            _walk(by_json[key], item, where, problems)


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
