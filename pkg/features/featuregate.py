"""Feature gates: named on/off switches with defaults and maturity stages, set by flag.

Corresponds to component-base ``featuregate`` (``FeatureGate``, ``FeatureSpec``, prerelease
stages, the ``--feature-gates`` flag). ``--feature-gates=Name=true,Other=false`` parses like
upstream: a bad entry fails the whole flag with an error that names the gate; ``AllAlpha`` and
``AllBeta`` switch every alpha (beta) gate not named explicitly; a gate locked to its default
cannot be changed; setting a GA or deprecated gate logs a warning.
"""

from __future__ import annotations

import argparse
import enum
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


class Stage(enum.Enum):
    """``featuregate.prerelease`` (the GA stage's string is empty, as upstream)."""

    ALPHA = "ALPHA"
    BETA = "BETA"
    GA = ""
    DEPRECATED = "DEPRECATED"


ALPHA, BETA, GA, DEPRECATED = Stage.ALPHA, Stage.BETA, Stage.GA, Stage.DEPRECATED

ALL_ALPHA = "AllAlpha"
ALL_BETA = "AllBeta"


@dataclass(frozen=True)
class FeatureSpec:
    default: bool
    stage: Stage = ALPHA
    lock_to_default: bool = False


class FeatureGateError(ValueError):
    """A ``--feature-gates`` value that cannot be applied."""


def _parse_bool(name: str, value: str) -> bool:
    v = value.strip()
    if v in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if v in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise FeatureGateError(f"invalid value of {name}={v}, err: strconv.ParseBool: parsing "
                           f"{v!r}: invalid syntax")


class FeatureGate:
    """A registry of known gates and their current values (thread-safe)."""

    def __init__(self, specs: Mapping[str, FeatureSpec] | None = None) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, FeatureSpec] = {
            ALL_ALPHA: FeatureSpec(False, ALPHA),
            ALL_BETA: FeatureSpec(False, BETA),
        }
        self._enabled: dict[str, bool] = {}
        if specs:
            self.add(specs)

    def add(self, specs: Mapping[str, FeatureSpec]) -> None:
        """Register gates. Re-registering a gate with the same spec is fine; with another
        spec it is an error."""
        with self._lock:
            for name, spec in specs.items():
                cur = self._known.get(name)
                if cur is not None and cur != spec:
                    raise ValueError(f"feature gate {name!r} with different spec already "
                                     "exists")
                self._known[name] = spec

    def known(self, name: str) -> bool:
        with self._lock:
            return name in self._known

    def spec(self, name: str) -> FeatureSpec:
        with self._lock:
            return self._known[name]

    def enabled(self, name: str) -> bool:
        """The gate's value. An unregistered name is a programming error (KeyError)."""
        with self._lock:
            if name in self._enabled:
                return self._enabled[name]
            spec = self._known.get(name)
        if spec is None:
            raise KeyError(f"feature {name!r} is not registered in FeatureGate")
        return spec.default

    def set(self, value: str) -> None:
        """Apply a ``--feature-gates`` value: ``Name=bool`` pairs separated by commas. Either
        every entry applies or none does."""
        parsed: dict[str, bool] = {}
        for part in value.split(","):
            entry = part.strip()
            if not entry:
                continue
            name, sep, raw = entry.partition("=")
            name = name.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            parsed[name] = _parse_bool(name, raw)
        self.set_from_map(parsed)

    def set_from_map(self, values: Mapping[str, bool]) -> None:
        with self._lock:
            enabled = dict(self._enabled)
            for name, on in values.items():
                spec = self._known.get(name)
                if spec is None:
                    raise FeatureGateError(f"unrecognized feature gate: {name}")
                if spec.lock_to_default and spec.default != on:
                    raise FeatureGateError(f"cannot set feature gate {name} to {_go(on)}, "
                                           f"feature is locked to {_go(spec.default)}")
                enabled[name] = on
            for all_name, stage in ((ALL_ALPHA, ALPHA), (ALL_BETA, BETA)):
                if all_name in values:
                    for name, spec in self._known.items():
                        if spec.stage == stage and name not in values and \
                                not spec.lock_to_default and name not in (ALL_ALPHA, ALL_BETA):
                            enabled[name] = values[all_name]
            self._enabled = enabled
            specs = {n: self._known[n] for n in values}
        for name, on in values.items():
            if specs[name].stage == DEPRECATED:
                log.warning("Setting deprecated feature gate %s=%s. It will be removed in a "
                            "future release.", name, _go(on))
            elif specs[name].stage == GA and not specs[name].lock_to_default:
                log.warning("Setting GA feature gate %s=%s. It will be removed in a future "
                            "release.", name, _go(on))

    def set_enabled(self, name: str, on: bool) -> None:
        """Set one gate (tests use this, like ``featuregatetesting``)."""
        self.set_from_map({name: on})

    def reset(self) -> None:
        """Back to the defaults."""
        with self._lock:
            self._enabled = {}

    def copy(self) -> FeatureGate:
        with self._lock:
            out = FeatureGate()
            out._known = dict(self._known)
            out._enabled = dict(self._enabled)
            return out

    def known_features(self) -> list[str]:
        """Help lines, as upstream prints them: ``Name=true|false (BETA - default=true)``;
        GA and deprecated gates are left out."""
        with self._lock:
            items = sorted(self._known.items())
        lines = []
        for name, spec in items:
            if spec.stage in (GA, DEPRECATED):
                continue
            if name in (ALL_ALPHA, ALL_BETA):
                lines.append(f"{name}=true|false ({spec.stage.value} - default=false)")
                continue
            lines.append(f"{name}=true|false ({spec.stage.value} - default="
                         f"{_go(spec.default)})")
        return lines

    def as_dict(self) -> dict[str, bool]:
        """Every registered gate's current value."""
        with self._lock:
            names = [n for n in self._known if n not in (ALL_ALPHA, ALL_BETA)]
        return {n: self.enabled(n) for n in sorted(names)}

    def add_flag(self, parser: argparse.ArgumentParser | Any,
                 flag: str = "--feature-gates") -> None:
        """``--feature-gates`` (repeatable; later values win per gate). Parse errors are
        argparse errors naming the gate."""
        gate = self

        class _Action(argparse.Action):
            def __call__(self, p: argparse.ArgumentParser, namespace: argparse.Namespace,
                         values: Any, option_string: str | None = None) -> None:
                try:
                    gate.set(str(values))
                except FeatureGateError as e:
                    p.error(f"invalid argument {values!r} for \"{flag}\" flag: {e}")
                setattr(namespace, self.dest, gate)

        parser.add_argument(
            flag, action=_Action, default=self, metavar="mapStringBool",
            help="A set of key=value pairs that describe feature gates for alpha/experimental "
                 "features. Options are:\n" + "\n".join(self.known_features()))


def _go(v: bool) -> str:
    return "true" if v else "false"


__all__ = [
    "ALL_ALPHA", "ALL_BETA", "ALPHA", "BETA", "DEPRECATED", "GA", "FeatureGate",
    "FeatureGateError", "FeatureSpec", "Stage",
]
