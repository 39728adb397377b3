"""Kubernetes meta/v1 types used by every kind, and the base class of top-level kinds.

Corresponds to k8s.io/apimachinery `pkg/apis/meta/v1` as Koordinator's types embed it:
TypeMeta/ObjectMeta, LabelSelector, Condition, OwnerReference, Time and Duration.
``KubeObject`` carries each kind's CRD facts (group, plural, scope, ...) as class variables and
registers itself, so the CRD generator and the fixture loaders find every kind.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, model_validator

from api.base import CRD_REQUIRED, ApiModel, Format, Int32, Int64

# --- Time ------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def _check_time(value: str) -> str:
    if not _RFC3339.match(value):
        raise ValueError(f"{value!r} is not an RFC 3339 timestamp")
    return value


def _time_from_datetime(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_time(value)
    return value


# metav1.Time on the wire: an RFC 3339 string kept as written.
Time = Annotated[str, BeforeValidator(_time_from_datetime), AfterValidator(_check_time),
                 Format("date-time")]


def format_time(moment: datetime) -> str:
    """metav1.Time's output: UTC, second precision (``2024-03-05T08:00:00Z``)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_timestamp(seconds: float) -> str:
    """``format_time`` of a moment in seconds since the epoch (``metav1.Now()`` of a clock)."""
    return format_time(datetime.fromtimestamp(seconds, UTC))


def parse_time(value: str) -> datetime:
    """An RFC 3339 timestamp (metav1.Time or MicroTime on the wire) as an aware datetime.

    Fractional seconds are optional and kept to the microsecond; the zone is ``Z`` or an offset.
    Raises ValueError for anything else, the empty string included.
    """
    return datetime.fromisoformat(_check_time(value).replace("z", "Z").replace("Z", "+00:00"))


def parse_timestamp(value: object) -> float | None:
    """``parse_time`` as seconds since the epoch, for a field read from raw JSON.

    None when the field is absent (None or empty) or is not an RFC 3339 string: such a field
    counts as unset, where ``parse_time`` raises.
    """
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value).timestamp()
    except ValueError:
        return None


# --- Duration --------------------------------------------------------------------------------

_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
                   "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(value: object) -> float:
    """A Go duration string (``"1h30m"``, ``"300ms"``, ``"-5s"``) in seconds.

    Raises ValueError for anything ``time.ParseDuration`` rejects.
    """
    text = value.strip() if isinstance(value, str) else value
    if not isinstance(text, str) or not text:
        raise ValueError(f"{value!r} is not a duration")
    sign = 1.0
    if text[0] in "+-":
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if not match:
            raise ValueError(f"{value!r} is not a Go duration (like '30s', '5m', '1h30m')")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos == 0:
        raise ValueError(f"{value!r} is not a Go duration")
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` (``"24h0m0s"``, ``"5m0s"``, ``"300ms"``, ``"0s"``)."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim_fraction(nanos, size) + unit
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    secs = _trim_fraction(rest, 10**9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return sign + secs


def _trim_fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _check_duration(value: str) -> str:
    parse_duration(value)
    return value


# metav1.Duration on the wire: a Go duration string, kept as written.
Duration = Annotated[str, AfterValidator(_check_duration)]


# --- Selectors, references, conditions -----------------------------------------------------


_ATOMIC_LIST: dict[str, Any] = {"x-kubernetes-list-type": "atomic"}


# metav1.LabelSelectorOperator.
IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC_LIST)


class LabelSelector(ApiModel):
    """metav1.LabelSelector; an empty selector matches everything, ``None`` matches nothing."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, json_schema_extra=_ATOMIC_LIST
    )


class OwnerReference(ApiModel):
    model_config = ConfigDict(json_schema_extra={"x-kubernetes-map-type": "atomic"})

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class Condition(ApiModel):
    """metav1.Condition. The schema limits are the API server's, as in upstream's CRDs."""

    type: str = Field(json_schema_extra={
        "maxLength": 316,
        "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                   r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
    })
    status: str = Field(json_schema_extra={"enum": ["True", "False", "Unknown"]})
    observed_generation: Int64 | None = Field(default=None, json_schema_extra={"minimum": 0})
    last_transition_time: Time = Field(json_schema_extra=CRD_REQUIRED)
    reason: str = Field(json_schema_extra={
        **CRD_REQUIRED, "maxLength": 1024, "minLength": 1,
        "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
    })
    message: str = Field(json_schema_extra={**CRD_REQUIRED, "maxLength": 32768})


class ObjectMeta(ApiModel):
    """metav1.ObjectMeta. Fields the API server adds that we do not model are kept as-is."""

    model_config = ConfigDict(extra="allow")

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: Int64 | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


# --- Top-level kinds -------------------------------------------------------------------------


class KubeObject(ApiModel):
    """A top-level kind served from a CRD.

    Subclasses set the class variables below; ``apiVersion`` and ``kind`` default from them.
    """

    group: ClassVar[str] = ""
    version: ClassVar[str] = ""
    plural: ClassVar[str] = ""
    singular: ClassVar[str] = ""
    namespaced: ClassVar[bool] = False
    short_names: ClassVar[tuple[str, ...]] = ()
    status_subresource: ClassVar[bool] = True
    served: ClassVar[bool] = True
    storage: ClassVar[bool] = True
    # additionalPrinterColumns entries, as written in the CRD.
    printer_columns: ClassVar[tuple[dict[str, str], ...]] = ()
    crd_annotations: ClassVar[dict[str, str]] = {}

    _registry: ClassVar[dict[tuple[str, str, str], type[KubeObject]]] = {}

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        if cls.group and cls.version:
            KubeObject._registry[(cls.group, cls.version, cls.__name__)] = cls

    @classmethod
    def api_version_string(cls) -> str:
        return f"{cls.group}/{cls.version}"

    @classmethod
    def crd_name(cls) -> str:
        return f"{cls.plural}.{cls.group}"

    @model_validator(mode="before")
    @classmethod
    def _fill_type_meta(cls, data: Any) -> Any:
        if isinstance(data, dict) and cls.group:
            data = dict(data)
            data.setdefault("apiVersion", cls.api_version_string())
            data.setdefault("kind", cls.__name__)
            if data.get("metadata") is None:
                data["metadata"] = {}
        return data


def registered_kinds() -> dict[tuple[str, str, str], type[KubeObject]]:
    """Every kind defined under ``api``, keyed by (group, version, kind).

    Import ``api.all_kinds`` first so every group module is loaded.
    """
    return dict(KubeObject._registry)


__all__ = [
    "DOES_NOT_EXIST", "EXISTS", "IN", "NOT_IN", "OPERATORS",
    "Condition", "Duration", "Int32", "Int64", "KubeObject", "LabelSelector",
    "LabelSelectorRequirement", "ObjectMeta", "OwnerReference", "Time", "format_duration",
    "format_time", "parse_duration", "parse_time", "parse_timestamp", "registered_kinds",
]
