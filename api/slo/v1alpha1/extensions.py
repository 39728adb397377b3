"""ExtensionsMap: third-party strategies carried in NodeSLO and NodeMetric.

Corresponds to the ``ExtensionsMap`` type of upstream `apis/slo/v1alpha1/nodeslo_types.go`.
Upstream declares the map as a *named* field tagged ``json:",inline"``, which Go does not
flatten, so the wire form is ``{"Object": {<extension name>: <config>, ...}}``. The CRD keeps
the object schemaless; the model therefore stores the wire object as it is and gives typed
access to the inner map.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, model_validator

from api.base import ApiModel

# The JSON key Go writes the map under.
OBJECT_KEY = "Object"


class ExtensionsMap(ApiModel):
    """Extension name → that extension's configuration; on the wire ``{"Object": {...}}``."""

    model_config = ConfigDict(
        extra="allow", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True}
    )

    @model_validator(mode="before")
    @classmethod
    def _check_object(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            inner = data.get(OBJECT_KEY)
            if inner is not None and not isinstance(inner, Mapping):
                raise ValueError(f"{OBJECT_KEY!r} must be a JSON object, not {inner!r}")
        return data

    @classmethod
    def of(cls, entries: Mapping[str, Any]) -> ExtensionsMap:
        """An ExtensionsMap holding ``entries`` (extension name → configuration)."""
        return cls.model_validate({OBJECT_KEY: dict(entries)})

    @property
    def object(self) -> dict[str, Any]:
        """The extension map itself (empty when unset); changes to it are kept."""
        extra = self.__pydantic_extra__
        assert extra is not None
        inner = extra.get(OBJECT_KEY)
        if inner is None:
            inner = extra[OBJECT_KEY] = {}
        return inner

    def get(self, name: str, default: Any = None) -> Any:
        """One extension's configuration, or ``default``."""
        extra = self.__pydantic_extra__ or {}
        return (extra.get(OBJECT_KEY) or {}).get(name, default)


__all__ = ["OBJECT_KEY", "ExtensionsMap"]
