"""Base class and field types for JSON annotation payloads, decoded and written as Go does.

No single upstream file: this is how Go's ``encoding/json`` treats the structs of
``apis/extension``. On input keys match case-insensitively, unknown keys are
ignored, ``null`` leaves a field at its zero value, and numbers, booleans and strings are not
converted into one another. On output fields come in declaration order; a field is left out
when empty (Go ``omitempty``) unless it is marked ``ALWAYS``; a ``PTR`` field (a Go pointer)
is left out only when None; map keys are sorted; quantities, durations and times are written in
Go's canonical forms.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from annotated_types import Interval
from pydantic import (
    AllowInfNan,
    BaseModel,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    Strict,
    StrictBool,
    TypeAdapter,
    model_serializer,
    model_validator,
)
from pydantic import WrapSerializer as _WrapSerializer

from api.base import GoJSONModel, go_json_dumps
from api.core import DeleteOptions, ObjectReference, Quantity, format_quantity
from api.extension.codec import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN
from api.meta import (
    Duration,
    LabelSelector,
    Time,
    format_duration,
    format_time,
    parse_duration,
    parse_time,
)


@dataclass(frozen=True, slots=True)
class _Emit:
    """How a field is written: ``always`` (no omitempty) or ``ptr`` (omitted only when nil)."""

    mode: str


ALWAYS = _Emit("always")
PTR = _Emit("ptr")

# Go integers: JSON numbers without a fraction, in range; strings and booleans are rejected.
GoInt32 = Annotated[int, Strict(), Interval(ge=INT32_MIN, le=INT32_MAX)]
GoInt64 = Annotated[int, Strict(), Interval(ge=INT64_MIN, le=INT64_MAX)]
# float64: JSON numbers only; values beyond float64 (1e999) are rejected as Go does.
GoFloat = Annotated[float, Strict(), AllowInfNan(False)]
GoBool = StrictBool

# Pointer fields (``*int64``, ``*bool`` with omitempty): written whenever set, even to zero.
OptInt64 = Annotated[GoInt64 | None, PTR]
OptBool = Annotated[GoBool | None, PTR]


def _canonical_duration(value: str) -> str:
    return format_duration(parse_duration(value))


def _canonical_time(value: str) -> str:
    return format_time(parse_time(value))


def _sorted_map(value: Any, handler: SerializerFunctionWrapHandler) -> Any:
    data = handler(value)
    return dict(sorted(data.items())) if isinstance(data, dict) else data


# resource.Quantity / metav1.Duration / metav1.Time, written back as Go writes them.
GoQuantity = Annotated[Quantity, PlainSerializer(format_quantity, return_type=str)]
GoDuration = Annotated[Duration, PlainSerializer(_canonical_duration, return_type=str)]
GoTime = Annotated[Time, PlainSerializer(_canonical_time, return_type=str)]

SORTED = _WrapSerializer(_sorted_map)

# Go maps: keys written in sorted order.
GoResourceList = Annotated[dict[str, GoQuantity], SORTED]
StrMap = Annotated[dict[str, str], SORTED]
Int64Map = Annotated[dict[str, GoInt64], SORTED]
AnyMap = Annotated[dict[str, Any], SORTED]


# Go's field order of the shared core/meta models where it differs from theirs, nested keys
# after a slash ("preconditions/" orders the fields of DeleteOptions.preconditions).
_GO_FIELD_ORDER: dict[str, tuple[str, ...]] = {
    "ObjectReference": ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion",
                        "fieldPath"),
    "LabelSelector": ("matchLabels", "matchExpressions"),
    "DeleteOptions": ("kind", "apiVersion", "gracePeriodSeconds", "preconditions",
                      "orphanDependents", "propagationPolicy", "dryRun",
                      "ignoreStoreReadErrorWithClusterBreakingPotential"),
    "DeleteOptions/preconditions": ("uid", "resourceVersion"),
}


# Map-typed fields of those models (Go writes map keys sorted).
_GO_MAP_FIELDS = frozenset({"matchLabels"})


def _reorder(data: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {k: data[k] for k in order if k in data} | {k: v for k, v in data.items()
                                                        if k not in order}


def _go_field_order(kind: str) -> _WrapSerializer:
    def serialize(value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(value)
        if not isinstance(data, dict):
            return data
        # Every field of these models is omitempty in Go.
        data = _reorder({k: v for k, v in data.items() if v not in ("", [], {})},
                        _GO_FIELD_ORDER[kind])
        for key, value in data.items():
            nested = _GO_FIELD_ORDER.get(f"{kind}/{key}")
            if nested and isinstance(value, dict):
                data[key] = _reorder(value, nested)
            elif key in _GO_MAP_FIELDS and isinstance(value, dict):
                data[key] = dict(sorted(value.items()))
        return data

    return _WrapSerializer(serialize)


# Shared core/meta models written with Go's field order.
GoObjectReference = Annotated[ObjectReference, _go_field_order("ObjectReference")]
GoLabelSelector = Annotated[LabelSelector, _go_field_order("LabelSelector")]
GoDeleteOptions = Annotated[DeleteOptions, _go_field_order("DeleteOptions")]


def _is_model(annotation: Any) -> tuple[bool, bool]:
    """(is a model type, allows None) for a field annotation."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        nullable = len(members) < len(args)
    else:
        members, nullable = [annotation], False
    members = [typing.get_args(m)[0] if typing.get_origin(m) is Annotated else m
               for m in members]
    is_model = len(members) == 1 and isinstance(members[0], type) and issubclass(
        members[0], BaseModel)
    return is_model, nullable


class GoPayload(GoJSONModel):
    """An annotation payload: decoded like Go's ``json.Unmarshal``, written like ``json.Marshal``.

    Fields default to Go ``omitempty`` on a value (left out when ``""``, ``0``, ``false``,
    empty or None). Mark a field ``ALWAYS`` when Go has no omitempty, ``PTR`` when Go uses a
    pointer; nested models are pointers when they allow None and always written otherwise.
    """

    _emit: ClassVar[dict[str, str]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        emit: dict[str, str] = {}
        for name, info in cls.model_fields.items():
            marks = [m.mode for m in info.metadata if isinstance(m, _Emit)]
            is_model, nullable = _is_model(info.annotation)
            if marks:
                emit[name] = marks[0]
            elif is_model:
                emit[name] = "ptr" if nullable else "always"
            else:
                emit[name] = "omitempty"
        cls._emit = emit

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        # Go leaves a field untouched (zero value, or nil pointer) when the JSON value is null.
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v is not None}
        return data

    @model_serializer(mode="wrap")
    def _go_marshal(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            key = info.alias or name
            value = data.get(key)
            mode = self._emit.get(name, "omitempty")
            if mode == "always":
                out[key] = value
            elif value is None:
                continue
            elif mode == "ptr" or not _is_empty(value):
                out[key] = value
        return out

    def to_go_json(self) -> str:
        """Compact JSON, byte for byte what Go's ``json.Marshal`` writes for this struct."""
        return go_json_dumps(self.model_dump(mode="json", by_alias=True, exclude_none=True))


def _is_empty(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float, str, list, dict)):
        return not value
    return False


def dump_json(adapter: TypeAdapter[Any], value: Any) -> str:
    """Compact Go JSON for ``value`` of the type ``adapter`` was built for (a list or a map of
    payloads, a ResourceList...)."""
    return go_json_dumps(adapter.dump_python(value, mode="json", by_alias=True, exclude_none=True))


__all__ = [
    "ALWAYS", "PTR", "SORTED", "AnyMap", "GoBool", "GoDeleteOptions", "GoDuration", "GoFloat",
    "GoInt32", "GoInt64", "GoLabelSelector", "GoObjectReference", "GoPayload", "GoQuantity",
    "GoResourceList", "GoTime", "Int64Map", "OptBool", "OptInt64", "StrMap", "dump_json",
]
