"""Configuration merging with Go's ``MergeCfg`` semantics.

Corresponds to upstream `pkg/util/utils.go` ``MergeCfg``: the override is marshalled to JSON
(so ``omitempty`` fields that are empty disappear) and unmarshalled onto a copy of the base.
The result, which this module reproduces on our models:

* nested objects merge field by field;
* maps merge key by key (base keys survive; a key present in both takes the override's value
  whole);
* arrays are replaced wholesale;
* fields the override always writes (Go non-pointer structs such as
  ``SystemStrategy.totalNetworkBandwidth``) always overwrite the base.

Which fields Go leaves out follows the model conventions of ``api``: a field typed
``X | None`` is ``omitempty`` (left out when ``None``, and when it is an empty string, list or
map, because those are Go value types), a field without ``None`` is always written. A model
lists in ``go_pointer_strings`` the string fields that are pointers in Go, whose empty value
is written and therefore overwrites.
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Any, TypeVar, Union

from pydantic import BaseModel
from pydantic.fields import FieldInfo

M = TypeVar("M", bound=BaseModel)


def unwrap_type(tp: Any) -> Any:
    """``tp`` without ``Annotated`` and ``None`` (``Annotated[X, ...] | None`` → ``X``)."""
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(members) != 1:
                return tp
            tp = members[0]
        else:
            return tp


def _allows_none(info: FieldInfo) -> bool:
    tp = info.annotation
    if typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return typing.get_origin(tp) in (Union, types.UnionType) and type(None) in typing.get_args(tp)


def _model_class(tp: Any) -> type[BaseModel] | None:
    tp = unwrap_type(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _is_map(tp: Any) -> bool:
    return typing.get_origin(unwrap_type(tp)) is dict


def _json_name(name: str, info: FieldInfo) -> str:
    return info.serialization_alias or info.alias or name


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return go_marshal(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def go_marshal(model: BaseModel) -> dict[str, Any]:
    """The object Go's ``json.Marshal`` writes for ``model`` (see the module docstring)."""
    pointer_strings: frozenset[str] = getattr(type(model), "go_pointer_strings", frozenset())
    out: dict[str, Any] = {}
    for name, info in type(model).model_fields.items():
        value = getattr(model, name)
        if value is None:
            continue
        if (_allows_none(info) and isinstance(value, str | list | dict) and not value
                and name not in pointer_strings):
            continue
        out[_json_name(name, info)] = _plain(value)
    for key, value in (model.__pydantic_extra__ or {}).items():
        if value is not None:
            out[key] = _plain(value)
    return out


def _field(model: type[BaseModel], json_name: str) -> FieldInfo | None:
    for name, info in model.model_fields.items():
        if _json_name(name, info) == json_name:
            return info
    return None


def _apply(model: type[BaseModel], base: dict[str, Any], override: dict[str, Any]
           ) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        current = out.get(key)
        info = _field(model, key)
        if info is None:
            # An extra key (a model that keeps unknown keys, like ExtensionsMap's "Object"):
            # Go decodes it into a map, so it merges key by key.
            if isinstance(value, dict) and isinstance(current, dict):
                out[key] = {**current, **value}
            else:
                out[key] = value
            continue
        sub = _model_class(info.annotation)
        if sub is not None and isinstance(value, dict) and isinstance(current, dict):
            out[key] = _apply(sub, current, value)
        elif _is_map(info.annotation) and isinstance(value, dict) and isinstance(current, dict):
            out[key] = {**current, **value}
        else:
            out[key] = value
    return out


def merge_cfg(base: M, override: BaseModel | None) -> M:
    """A new ``base`` with ``override`` merged on top, as Go's ``MergeCfg`` does.

    ``override`` may be of ``base``'s class or of a class sharing its JSON fields (a node
    entry that embeds the strategy); fields ``base``'s class does not have are ignored.
    Neither argument is changed.
    """
    if override is None:
        return base.model_copy(deep=True)
    base_json = base.model_dump(mode="json", by_alias=True, exclude_none=True)
    merged = _apply(type(base), base_json, go_marshal(override))
    known = {_json_name(n, i) for n, i in type(base).model_fields.items()}
    if type(base).model_config.get("extra") != "allow":
        merged = {k: v for k, v in merged.items() if k in known}
    return type(base).model_validate(merged)


__all__ = ["go_marshal", "merge_cfg", "unwrap_type"]
