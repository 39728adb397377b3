"""Turns Kubernetes objects (parsed JSON or YAML) into the models of ``api``.

Corresponds to what upstream gets from its scheme and universal deserializer: the model is chosen
by ``apiVersion`` and ``kind``. Errors name the object and the JSON path of the bad field, so a
log line or webhook answer says exactly what to fix.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from pydantic import ValidationError

import api.all_kinds  # noqa: F401  (registers every kind)
from api.meta import KubeObject, registered_kinds


class ObjectLoadError(ValueError):
    """An object that cannot be turned into a model.

    ``api_version``, ``kind`` and ``name`` identify the object (``namespace/name`` where it has a
    namespace; empty when unknown); ``problems`` lists ``(field path, reason)`` pairs, empty when
    the object as a whole is wrong (unknown kind, not a mapping).
    """

    def __init__(self, reason: str, *, api_version: str = "", kind: str = "", name: str = "",
                 problems: tuple[tuple[str, str], ...] = ()) -> None:
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.problems = problems
        self.reason = reason
        super().__init__(reason)


class UnknownKindError(ObjectLoadError):
    """No model is registered for the object's apiVersion and kind."""


def kind_for(api_version: str, kind: str) -> type[KubeObject] | None:
    """The model registered for ``apiVersion``/``kind``, or None."""
    group, _, version = api_version.rpartition("/")
    return registered_kinds().get((group, version, kind))


def load_object(data: dict[str, Any]) -> KubeObject:
    """The model instance for one object, chosen by its ``apiVersion`` and ``kind``.

    Raises UnknownKindError for a kind we do not model and ObjectLoadError for anything else
    wrong, naming the object and each bad field.
    """
    if not isinstance(data, dict):
        raise ObjectLoadError(f"expected an object (a mapping), got {type(data).__name__}")
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    name = _object_name(data)
    if not isinstance(api_version, str) or not api_version:
        raise ObjectLoadError(f"object {name or '<unnamed>'} has no apiVersion",
                              kind=kind if isinstance(kind, str) else "", name=name)
    if not isinstance(kind, str) or not kind:
        raise ObjectLoadError(f"object {name or '<unnamed>'} ({api_version}) has no kind",
                              api_version=api_version, name=name)
    model = kind_for(api_version, kind)
    if model is None:
        where = f" (object {name})" if name else ""
        raise UnknownKindError(f"unknown kind {kind!r} in apiVersion {api_version!r}{where}",
                               api_version=api_version, kind=kind, name=name)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        problems = tuple((field_path(e["loc"]), _reason(e["msg"])) for e in err.errors())
        detail = "; ".join(f"{path}: {msg}" for path, msg in problems)
        raise ObjectLoadError(
            f"invalid {kind} {name or '<unnamed>'} ({api_version}): {detail}",
            api_version=api_version, kind=kind, name=name, problems=problems,
        ) from None


def _reason(message: str) -> str:
    return message.removeprefix("Value error, ")


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def field_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as a JSON path: ``spec.owners[0].object``,
    ``status.allocatable["koordinator.sh/gpu-core"]``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out or "<object>"


def _object_name(data: dict[str, Any]) -> str:
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("name") or metadata.get("generateName") or ""
    namespace = metadata.get("namespace")
    if not isinstance(name, str):
        name = str(name)
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace and name else name


# The base is picked at import time (libyaml's loader when PyYAML was built with it), so the
# type checker sees an Any base.
class _KubeYAMLLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML as Kubernetes reads it: timestamps stay strings (no datetime objects)."""


_KubeYAMLLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml_documents(text: str) -> list[Any]:
    """Every non-empty document of a multi-document YAML text, parsed (``---`` separated)."""
    return [doc for doc in yaml.load_all(text, Loader=_KubeYAMLLoader) if doc is not None]


def load_yaml_objects(text: str) -> list[KubeObject]:
    """Every document of a YAML text as a model; raises on the first unknown or invalid one."""
    return [load_object(doc) for doc in load_yaml_documents(text)]


__all__ = [
    "ObjectLoadError", "UnknownKindError", "field_path", "kind_for", "load_object",
    "load_yaml_documents", "load_yaml_objects",
]
