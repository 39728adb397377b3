"""Errors of the scheduler configuration: one field error per problem, one exception per file.

Corresponds to apimachinery's ``field.Error``/``field.ErrorList`` as kube-scheduler's and
Koordinator's validation (``pkg/scheduler/apis/config/validation``) return them, and to the
decoding errors of its strict serializer. Every problem names the JSON path of its field
(``profiles[0].pluginConfig[1].args.usageThresholds.cpu``) so the message says what to fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from api.loader import field_path

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem: where (a JSON location, as pydantic writes it) and what is wrong."""

    loc: Loc
    message: str

    @property
    def path(self) -> str:
        return field_path(self.loc)

    def under(self, prefix: Loc) -> FieldError:
        """The same problem seen from an enclosing object whose field ``prefix`` holds it."""
        return FieldError(prefix + self.loc, self.message)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.loc else self.message


def nest(prefix: Loc, errors: Iterable[FieldError]) -> list[FieldError]:
    """``errors`` re-rooted under ``prefix``."""
    return [e.under(prefix) for e in errors]


def validation_errors(err: ValidationError) -> list[FieldError]:
    """A pydantic error as FieldErrors. Unknown fields are left out: ``strict.unknown_fields``
    reports them, also inside the api models that ignore extra keys."""
    return [FieldError(tuple(e["loc"]), e["msg"].removeprefix("Value error, "))
            for e in err.errors() if e["type"] != "extra_forbidden"]


class SchedulerConfigError(ValueError):
    """A scheduler configuration that cannot be loaded.

    ``source`` names the file (or other origin) when known; ``errors`` lists every problem found
    (decoding stops at the first stage that fails: YAML, then fields, then validation).
    """

    def __init__(self, errors: Sequence[FieldError], source: str | None = None) -> None:
        self.errors = list(errors)
        self.source = source
        detail = "; ".join(str(e) for e in self.errors)
        super().__init__(f"{source}: {detail}" if source else detail)


def in_range(loc: Loc, value: int | float, low: int | float, high: int | float) -> list[FieldError]:
    """An error unless ``low <= value <= high``."""
    if low <= value <= high:
        return []
    return [FieldError(loc, f"must be in {low}..{high}, got {value}")]


def map_in_range(loc: Loc, values: dict[str, int], low: int, high: int) -> list[FieldError]:
    """An error for every map entry outside ``low..high``, located at its key."""
    return [e for key, value in values.items() for e in in_range(loc + (key,), value, low, high)]


def one_of(loc: Loc, value: str, allowed: Sequence[str]) -> list[FieldError]:
    """An error unless ``value`` is one of ``allowed`` (field.NotSupported)."""
    if value in allowed:
        return []
    choices = ", ".join(repr(a) for a in allowed)
    return [FieldError(loc, f"unsupported value {value!r}: must be one of {choices}")]
