"""Strict decoding, as kube-scheduler reads its configuration file.

Corresponds to apimachinery's strict YAML/JSON serializer (``runtime/serializer/json`` with
``Strict: true``, used by kube-scheduler's ``LoadConfigFromFile``): a mapping key given twice and
a field the type does not have are errors that name the field; keys match case-sensitively; an
explicit ``null`` leaves a field unset, as Go's ``encoding/json`` does.
"""

from __future__ import annotations

import inspect
import types
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel

from scheduler.apis.config.errors import FieldError, Loc

_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictYAMLLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """Safe YAML that refuses duplicate mapping keys and keeps timestamps as strings."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"mapping key {key!r} already defined at line {seen[key]}",
                        key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
            except TypeError:  # an unhashable key: the base constructor reports it
                continue
        return super().construct_mapping(node, deep)


# Kubernetes reads YAML through JSON, which has no timestamps: "2024-01-01" stays a string.
StrictYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """The one YAML document in ``text``; raises ``yaml.YAMLError`` when it is malformed."""
    return yaml.load(text, Loader=StrictYAMLLoader)


def yaml_problem(err: yaml.YAMLError) -> str:
    """Where and what the YAML problem is, for an error message."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        return f"{err.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return str(err)


def drop_nulls(value: Any) -> Any:
    """``value`` without ``null`` mapping entries, recursively (null leaves a Go field as is)."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


def unknown_fields(model: type[BaseModel], data: Any, loc: Loc = ()) -> list[FieldError]:
    """An error for every key of ``data`` (and of the objects nested in it) that ``model`` has
    no field for, matching JSON names exactly. Nested models are followed through ``X | None``,
    ``list[X]`` and ``dict[str, X]``; other unions (raw plugin args) are not entered."""
    if not isinstance(data, dict):
        return []
    fields = {info.alias or name: info.annotation for name, info in model.model_fields.items()}
    errors = []
    for key, value in data.items():
        if key not in fields:
            errors.append(FieldError(loc + (key,), "unknown field"))
        else:
            errors += _unknown_in(fields[key], value, loc + (key,))
    return errors


def _unknown_in(annotation: Any, value: Any, loc: Loc) -> list[FieldError]:
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Annotated:
        return _unknown_in(args[0], value, loc)
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        return _unknown_in(present[0], value, loc) if len(present) == 1 else []
    if origin is list and isinstance(value, list):
        return [e for i, item in enumerate(value) for e in _unknown_in(args[0], item, loc + (i,))]
    if origin is dict and isinstance(value, dict):
        return [e for key, item in value.items() for e in _unknown_in(args[1], item, loc + (key,))]
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return unknown_fields(annotation, value, loc)
    return []
