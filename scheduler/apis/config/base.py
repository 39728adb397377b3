"""Base classes and field types of the scheduler configuration models.

Corresponds to the conventions kube-scheduler's and Koordinator's config types
(``k8s.io/kube-scheduler/config``, Koordinator ``pkg/scheduler/apis/config/v1``) get from Go
and from apimachinery's strict decoder: camelCase JSON names, no unknown fields, no conversion
between numbers, strings and booleans, integers in the range of their Go type, and ``SetDefaults``
functions that also replace explicit zero values (``gcDurationSeconds: 0`` means the default).

Durations (``metav1.Duration``) are held as seconds (``float``): a Go duration string on the
wire (``"15s"``, ``"2m"``), written back in Go's form (``"15s"``, ``"2m0s"``).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, PlainSerializer, ValidationInfo

from api.base import ApiModel
from api.meta import format_duration, parse_duration
from scheduler.apis.config.errors import FieldError

# Validation context key set while decoding a file: wire values must have their Go JSON types.
WIRE = "wire"


def _duration_seconds(value: Any, info: ValidationInfo) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    # metav1.Duration only unmarshals from a string; Python callers may pass seconds.
    if info.context and info.context.get(WIRE):
        raise ValueError(f"must be a duration string such as '15s', got {value!r}")
    return value


DurationSeconds = Annotated[
    float,
    BeforeValidator(_duration_seconds),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


class ConfigModel(ApiModel):
    """A configuration object: strict types, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", strict=True)

    def fill_zero(self, *names: str) -> None:
        """Set each named field that holds its zero value (0, "", empty) to the field's default,
        as upstream's ``SetDefaults`` functions do with ``if x == 0 { x = default }``."""
        fields = type(self).model_fields
        for name in names:
            if not getattr(self, name):
                setattr(self, name, fields[name].get_default(call_default_factory=True))


class PluginArgs(ConfigModel):
    """The ``args`` of one ``pluginConfig`` entry whose kind we know (``<Plugin>Args``).

    Subclasses apply their defaults when built (a model validator) and report their validation
    rules from ``validate_args`` with locations relative to the args object.
    """

    # The plugin these args configure; the kind is the class name.
    PLUGIN: ClassVar[str] = ""

    api_version: str | None = None
    kind: str | None = None

    @classmethod
    def kind_name(cls) -> str:
        return cls.__name__

    def validate_args(self) -> list[FieldError]:
        """Problems with the (defaulted) args, as upstream's ``Validate<Kind>`` reports them."""
        return []
