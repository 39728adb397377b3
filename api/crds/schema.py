"""openAPIV3Schema from the pydantic models: our stand-in for controller-gen's CRD generator.

Corresponds to upstream's `config/crd/bases` generation (`make manifests`). A model's fields,
their Python types and the markers of ``api.base`` (formats, schemaless, int-or-string,
quantities, CRD-required, CRD defaults, ``x-kubernetes-*`` extras) decide the schema.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from api.base import Format, IntOrStringMarker, QuantityMarker, Schemaless
from api.core import QUANTITY_PATTERN
from api.meta import KubeObject

# Extras copied from a field's or model's json_schema_extra into its schema as they are.
_PASSTHROUGH = ("nullable", "enum", "minItems", "maxItems", "minProperties", "maxProperties",
                "minimum", "maximum", "minLength", "maxLength", "pattern", "format")

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\nIn CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds"
)


class SchemaError(TypeError):
    """A model uses a Python type the generator cannot express as OpenAPI."""


def object_schema(kind: type[KubeObject]) -> dict[str, Any]:
    """The openAPIV3Schema of a top-level kind."""
    schema = model_schema(kind, _stack=())
    properties = schema["properties"]
    properties["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    properties["kind"] = {"description": _KIND_DOC, "type": "string"}
    # Like controller-gen: metadata is validated by the API server itself, not by the schema.
    properties["metadata"] = {"type": "object"}
    doc = _doc(kind)
    if doc:
        schema = {"description": doc, **schema}
    return schema


def model_schema(model: type[BaseModel], _stack: tuple[type, ...]) -> dict[str, Any]:
    if model in _stack:
        raise SchemaError(f"recursive model {model.__name__} cannot be expressed in a CRD")
    stack = (*_stack, model)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, info in model.model_fields.items():
        json_name = info.serialization_alias or info.alias or name
        properties[json_name] = field_schema(info, stack)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if info.is_required() or extra.get("crdRequired"):
            required.append(json_name)
    schema: dict[str, Any] = {}
    if properties:
        schema["properties"] = dict(sorted(properties.items()))
    if required:
        schema["required"] = sorted(required)
    schema["type"] = "object"
    model_extra = model.model_config.get("json_schema_extra")
    if isinstance(model_extra, dict):
        schema.update(_extras(model_extra))
    return schema


def field_schema(info: FieldInfo, stack: tuple[type, ...]) -> dict[str, Any]:
    schema = type_schema(info.annotation, list(info.metadata), stack)
    if info.description:
        schema = {"description": info.description, **schema}
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    schema.update(_extras(extra))
    if "crdDefault" in extra:
        schema["default"] = extra["crdDefault"]
    return dict(sorted(schema.items()))


def type_schema(tp: Any, metadata: list[Any], stack: tuple[type, ...]) -> dict[str, Any]:
    """Schema of one Python type with its Annotated metadata."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        base, *more = typing.get_args(tp)
        return type_schema(base, [*more, *metadata], stack)

    markers = {type(m) for m in metadata}
    if Schemaless in markers:
        return {"x-kubernetes-preserve-unknown-fields": True}
    if QuantityMarker in markers:
        return {
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": True,
        }
    if IntOrStringMarker in markers:
        return {"anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True}

    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) != 1:
            raise SchemaError(f"union {tp!r} needs an IntOrString or Schemaless marker")
        return type_schema(members[0], metadata, stack)

    schema: dict[str, Any]
    if origin is Literal:
        values = list(typing.get_args(tp))
        schema = {"enum": values, "type": _json_type(type(values[0]))}
    elif origin in (list, tuple, set, frozenset):
        (item,) = typing.get_args(tp)[:1]
        schema = {"items": type_schema(item, [], stack), "type": "array"}
    elif origin is dict:
        _, value = typing.get_args(tp)
        if value is Any:
            schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            schema = {"additionalProperties": type_schema(value, [], stack), "type": "object"}
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        schema = model_schema(tp, stack)
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [member.value for member in tp]
        schema = {"enum": values, "type": _json_type(type(values[0]))}
    elif tp is Any:
        schema = {"x-kubernetes-preserve-unknown-fields": True}
    else:
        schema = {"type": _json_type(tp)}

    for mark in metadata:
        if isinstance(mark, Format):
            schema["format"] = mark.name
        elif isinstance(mark, annotated_types.Ge):
            schema["minimum"] = mark.ge
        elif isinstance(mark, annotated_types.Le):
            schema["maximum"] = mark.le
        elif isinstance(mark, annotated_types.Gt):
            schema["minimum"] = mark.gt
            schema["exclusiveMinimum"] = True
        elif isinstance(mark, annotated_types.Lt):
            schema["maximum"] = mark.lt
            schema["exclusiveMaximum"] = True
        elif isinstance(mark, annotated_types.MinLen):
            schema["minItems" if schema.get("type") == "array" else "minLength"] = mark.min_length
    return dict(sorted(schema.items()))


def _json_type(tp: Any) -> str:
    if tp is bool:
        return "boolean"
    if isinstance(tp, type) and issubclass(tp, int):
        return "integer"
    if isinstance(tp, type) and issubclass(tp, float):
        return "number"
    if isinstance(tp, type) and issubclass(tp, str):
        return "string"
    raise SchemaError(f"no OpenAPI type for {tp!r}")


def _extras(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k.startswith("x-kubernetes-") or k in _PASSTHROUGH}


def _doc(kind: type[KubeObject]) -> str:
    text = (kind.__doc__ or "").strip()
    return text.split("\n\n", 1)[0].replace("\n", " ") if text else ""
