"""Base classes and schema markers shared by every API model.

Corresponds to the conventions upstream gets from Go's `encoding/json` and controller-gen:

* ``ApiModel``: a CR body. JSON names are the Python names in camelCase unless a field gives
  an explicit alias; output leaves out fields that are ``None`` (Go's ``omitempty`` on pointers);
  fields that upstream always writes are typed without ``None`` and carry their zero default.
* ``GoJSONModel``: an annotation or ConfigMap payload. Keys match case-insensitively and unknown
  keys are ignored, as Go's decoder does (see ``api.extension.payload``).
* Markers in ``Annotated[...]`` metadata tell the CRD generator what Python types cannot:
  ``Int32``, ``Schemaless`` (x-kubernetes-preserve-unknown-fields), ``CRD_REQUIRED``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel


@dataclass(frozen=True, slots=True)
class Format:
    """OpenAPI ``format`` for an integer or string field (``int32``, ``int64``, ``date-time``)."""

    name: str


@dataclass(frozen=True, slots=True)
class Schemaless:
    """The field is stored as-is (``x-kubernetes-preserve-unknown-fields: true``)."""


@dataclass(frozen=True, slots=True)
class IntOrStringMarker:
    """The field is a Kubernetes IntOrString (``x-kubernetes-int-or-string: true``)."""


@dataclass(frozen=True, slots=True)
class QuantityMarker:
    """The field is a resource.Quantity (IntOrString with the quantity pattern)."""


Int32 = Annotated[int, Format("int32")]
Int64 = Annotated[int, Format("int64")]

# json_schema_extra for a field the CRD schema lists under ``required`` although the model gives
# it a zero default (Go always writes it, and the API server defaults it).
CRD_REQUIRED: dict[str, Any] = {"crdRequired": True}


def crd_default(value: Any) -> dict[str, Any]:
    """json_schema_extra carrying a CRD ``default:`` that the API server applies."""
    return {"crdDefault": value}


class ApiModel(BaseModel):
    """Base of every CR body model: camelCase JSON names, ``None`` fields left out on output."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        validate_assignment=False,
        serialize_by_alias=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The object as JSON-ready data, optional fields that are unset left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        """Compact JSON, as Go's ``json.Marshal`` writes it (``<``, ``>``, ``&`` escaped)."""
        return go_json_dumps(self.to_dict())


def _field_lookup(cls: type[BaseModel]) -> dict[str, str]:
    """Lower-cased JSON name (and Python name) → JSON name, for case-insensitive matching."""
    table: dict[str, str] = {}
    for name, info in cls.model_fields.items():
        alias = info.alias or name
        table.setdefault(alias.lower(), alias)
        table.setdefault(name.lower(), alias)
    return table


class GoJSONModel(ApiModel):
    """An annotation or ConfigMap payload decoded with Go's rules: exact key first, then any
    key equal ignoring case; unknown keys ignored."""

    @model_validator(mode="before")
    @classmethod
    def _match_keys_ignoring_case(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        table = _field_lookup(cls)
        exact = set(table.values())
        out: dict[str, Any] = {}
        for key, value in data.items():
            if not isinstance(key, str):
                continue
            if key in exact:
                out[key] = value
                continue
            target = table.get(key.lower())
            # An exact key wins over a case-insensitive one, whatever their order in the input.
            if target is not None and target not in data:
                out[target] = value
        return out


def go_json_dumps(data: Any) -> str:
    """Compact JSON in Go's form: no spaces, ``<``, ``>``, ``&`` escaped as ``\\u003c`` etc."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
