"""The ``slo-controller-config`` ConfigMap as a whole: every data key parsed and resolved.

Corresponds to the key constants of upstream `apis/configuration/slo_controller_config.go`,
the ConfigMap location of `pkg/util/sloconfig/config.go`, and the per-key handlers of
`pkg/slo-controller` (config/colocation_cfg.go, nodeslo/resource_strategy.go, the
cpunormalization and resourceamplification plugins).

Each key is parsed on its own with Go's decoding rules (keys case-insensitive, unknown keys
ignored, no type coercion; JSON nested deeper than ``api.extension.codec.MAX_JSON_DEPTH`` is
refused) and resolved (defaults merged in, node entries merged onto the
cluster strategy). ``parse_slo_controller_config`` raises ``MalformedValueError`` naming the
first bad key; ``parse_slo_controller_config_lenient`` keeps the previous good value of every
bad key and returns the errors, which is what a controller wants: bad input never resets a
working config to defaults.
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ValidationError

from api.configuration.colocation import (
    ColocationCfg,
    InvalidColocationStrategyError,
    default_colocation_cfg,
    resolve_colocation_cfg,
)
from api.configuration.cpu_normalization import CPUNormalizationCfg
from api.configuration.host_application import HostApplicationCfg
from api.configuration.merge import unwrap_type
from api.configuration.node_strategies import (
    CPUBurstCfg,
    ResourceQOSCfg,
    ResourceThresholdCfg,
    SystemCfg,
)
from api.configuration.resource_amplification import ResourceAmplificationCfg
from api.errors import MalformedValueError
from api.extension.codec import json_depth_error
from api.slo.v1alpha1.nodeslo import NodeSLOSpec

# Where koord-manager reads it (flags --slo-config-name, --config-namespace).
SLO_CTRL_CONFIG_MAP = "slo-controller-config"
CONFIG_NAMESPACE = "koordinator-system"

COLOCATION_CONFIG_KEY = "colocation-config"
RESOURCE_THRESHOLD_CONFIG_KEY = "resource-threshold-config"
RESOURCE_QOS_CONFIG_KEY = "resource-qos-config"
CPU_BURST_CONFIG_KEY = "cpu-burst-config"
SYSTEM_CONFIG_KEY = "system-config"
HOST_APPLICATION_CONFIG_KEY = "host-application-config"
CPU_NORMALIZATION_CONFIG_KEY = "cpu-normalization-config"
RESOURCE_AMPLIFICATION_CONFIG_KEY = "resource-amplification-config"


@dataclass(frozen=True)
class SLOControllerConfig:
    """Every key of slo-controller-config, parsed and resolved (defaults where missing)."""

    colocation: ColocationCfg = field(default_factory=default_colocation_cfg)
    resource_threshold: ResourceThresholdCfg = field(default_factory=ResourceThresholdCfg.default)
    resource_qos: ResourceQOSCfg = field(default_factory=ResourceQOSCfg.default)
    cpu_burst: CPUBurstCfg = field(default_factory=CPUBurstCfg.default)
    system: SystemCfg = field(default_factory=SystemCfg.default)
    host_application: HostApplicationCfg = field(default_factory=HostApplicationCfg)
    cpu_normalization: CPUNormalizationCfg = field(default_factory=CPUNormalizationCfg.default)
    resource_amplification: ResourceAmplificationCfg = field(
        default_factory=ResourceAmplificationCfg.default)
    # Any other key, kept as written, for extension plugins.
    extensions: Mapping[str, str] = field(default_factory=dict)

    def node_slo_spec(self, node: Mapping[str, Any]) -> NodeSLOSpec:
        """The NodeSLO spec koord-manager renders for a node (without plugin extensions).

        Raises MalformedValueError when the node's network-bandwidth annotation is bad.
        """
        return NodeSLOSpec(
            resource_used_threshold_with_be=self.resource_threshold.for_node(node),
            resource_qos_strategy=self.resource_qos.for_node(node),
            cpu_burst_strategy=self.cpu_burst.for_node(node),
            system_strategy=self.system.for_node(node),
            # Upstream writes no list rather than an empty one (omitempty).
            host_applications=self.host_application.for_node(node) or None,
        )


# --- error messages --------------------------------------------------------------------------


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "").isalnum():
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out or "<top level>"


def _bounds(tp: Any) -> tuple[str | None, str | None]:
    """The lower and upper limits written on an annotated type (``Annotated[int, Ge(0)]``)."""
    low = high = None
    stack = [tp]
    while stack:
        current = stack.pop()
        origin = typing.get_origin(current)
        if origin is typing.Annotated:
            base, *meta = typing.get_args(current)
            stack.append(base)
            for mark in meta:
                if isinstance(mark, Ge):
                    low = f">= {mark.ge}"
                elif isinstance(mark, Gt):
                    low = f"> {mark.gt}"
                elif isinstance(mark, Le):
                    high = f"<= {mark.le}"
                elif isinstance(mark, Lt):
                    high = f"< {mark.lt}"
        elif origin is not None:
            stack.extend(a for a in typing.get_args(current) if a is not type(None))
    return low, high


def _annotation_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The declared type of the field an error location points at (None if unknown)."""
    tp: Any = model
    annotation = None
    for part in loc:
        current = unwrap_type(tp)
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            found = next((info for name, info in current.model_fields.items()
                          if part in (info.alias, name)), None)
            if found is None:
                return None
            tp = annotation = found.annotation
            continue
        origin = typing.get_origin(current)
        if origin is list and isinstance(part, int):
            tp = annotation = typing.get_args(current)[0]
        elif origin is dict:
            tp = annotation = typing.get_args(current)[1]
        else:
            return annotation
    return annotation


_RANGE_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _describe(model: type[BaseModel], err: ValidationError) -> str:
    parts = []
    for item in err.errors(include_url=False):
        path = _path(item["loc"])
        if item["type"] in _RANGE_ERRORS:
            low, high = _bounds(_annotation_at(model, item["loc"]))
            allowed = " and ".join(b for b in (low, high) if b)
            parts.append(f"{path}: {item['input']!r} is out of range (allowed: {allowed})")
        elif item["type"] == "value_error":  # our validators already quote the value
            parts.append(f"{path}: {item['msg'].removeprefix('Value error, ')}")
        else:
            got = json.dumps(item["input"], default=repr)[:80]
            parts.append(f"{path}: {item['msg']}, got {got}")
    return "; ".join(parts)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"


def decode_config_json(key: str, text: Any, obj: str | None = None) -> dict[str, Any]:
    """One key's value as a JSON object (``null`` → ``{}``), else MalformedValueError naming
    ``obj`` (``"configmap koordinator-system/slo-controller-config"``) and ``key``: not a string,
    invalid JSON, nested deeper than ``MAX_JSON_DEPTH``, or not an object."""
    if not isinstance(text, str):
        raise MalformedValueError(key, f"value must be a string, got {type(text).__name__}",
                                  obj=obj)
    too_deep = json_depth_error(text)
    if too_deep is not None:  # json.loads would raise RecursionError
        raise MalformedValueError(key, f"invalid JSON: {too_deep}", obj=obj)
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise MalformedValueError(
            key, f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}",
            obj=obj) from None
    except ValueError as err:
        raise MalformedValueError(key, f"invalid JSON: {err}", obj=obj) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MalformedValueError(key, f"expected a JSON object, got {_json_kind(data)}",
                                  obj=obj)
    return data


def _load(key: str, text: Any, model: type[BaseModel], obj: str | None) -> Any:
    """Parse one key's JSON into ``model`` the way Go's decoder would."""
    data = decode_config_json(key, text, obj)
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as err:
        raise MalformedValueError(key, _describe(model, err), obj=obj) from None


# --- per-key parsers -------------------------------------------------------------------------


def parse_colocation_config(text: str | None, *, obj: str | None = None) -> ColocationCfg:
    """``colocation-config`` resolved; missing or empty means the defaults.

    Raises MalformedValueError for invalid JSON or types, or an invalid cluster strategy.
    """
    if text is None or text == "":
        return default_colocation_cfg()
    raw = _load(COLOCATION_CONFIG_KEY, text, ColocationCfg, obj)
    try:
        return resolve_colocation_cfg(raw)
    except InvalidColocationStrategyError as err:
        raise MalformedValueError(COLOCATION_CONFIG_KEY, str(err), obj=obj) from None


def _strategy_parser(key: str, model: Any) -> Callable[..., Any]:
    def parse(text: str | None, *, obj: str | None = None) -> Any:
        if text is None:
            return model.default()
        return _load(key, text, model, obj).resolve()

    parse.__name__ = f"parse_{key.replace('-', '_')}"
    parse.__doc__ = f"``{key}`` resolved; missing means the defaults. Raises MalformedValueError."
    return parse


parse_resource_threshold_config = _strategy_parser(RESOURCE_THRESHOLD_CONFIG_KEY,
                                                   ResourceThresholdCfg)
parse_resource_qos_config = _strategy_parser(RESOURCE_QOS_CONFIG_KEY, ResourceQOSCfg)
parse_cpu_burst_config = _strategy_parser(CPU_BURST_CONFIG_KEY, CPUBurstCfg)
parse_system_config = _strategy_parser(SYSTEM_CONFIG_KEY, SystemCfg)
parse_cpu_normalization_config = _strategy_parser(CPU_NORMALIZATION_CONFIG_KEY,
                                                  CPUNormalizationCfg)
parse_resource_amplification_config = _strategy_parser(RESOURCE_AMPLIFICATION_CONFIG_KEY,
                                                       ResourceAmplificationCfg)


def parse_host_application_config(text: str | None, *,
                                   obj: str | None = None) -> HostApplicationCfg:
    """``host-application-config``; missing means no applications."""
    if text is None:
        return HostApplicationCfg()
    return _load(HOST_APPLICATION_CONFIG_KEY, text, HostApplicationCfg, obj)


# data key → (SLOControllerConfig field, parser)
KEY_PARSERS: dict[str, tuple[str, Callable[..., Any]]] = {
    COLOCATION_CONFIG_KEY: ("colocation", parse_colocation_config),
    RESOURCE_THRESHOLD_CONFIG_KEY: ("resource_threshold", parse_resource_threshold_config),
    RESOURCE_QOS_CONFIG_KEY: ("resource_qos", parse_resource_qos_config),
    CPU_BURST_CONFIG_KEY: ("cpu_burst", parse_cpu_burst_config),
    SYSTEM_CONFIG_KEY: ("system", parse_system_config),
    HOST_APPLICATION_CONFIG_KEY: ("host_application", parse_host_application_config),
    CPU_NORMALIZATION_CONFIG_KEY: ("cpu_normalization", parse_cpu_normalization_config),
    RESOURCE_AMPLIFICATION_CONFIG_KEY: ("resource_amplification",
                                        parse_resource_amplification_config),
}


def _extension_keys(data: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in data.items() if k not in KEY_PARSERS and isinstance(v, str)}


def parse_slo_controller_config(data: Mapping[str, Any] | None, *,
                                obj: str | None = None) -> SLOControllerConfig:
    """Every key of a ConfigMap's ``data`` parsed and resolved; missing keys get defaults.

    Raises MalformedValueError for the first bad key (in KEY_PARSERS order). ``obj`` names the
    ConfigMap in messages (``"configmap koordinator-system/slo-controller-config"``).
    """
    data = data or {}
    values = {name: parser(data.get(key), obj=obj) for key, (name, parser) in KEY_PARSERS.items()}
    return SLOControllerConfig(**values, extensions=_extension_keys(data))


def parse_slo_controller_config_lenient(
    data: Mapping[str, Any] | None, previous: SLOControllerConfig | None = None, *,
    obj: str | None = None,
) -> tuple[SLOControllerConfig, list[MalformedValueError]]:
    """Like parse_slo_controller_config, but a bad key keeps its value from ``previous``
    (the defaults when there is none) and its error is returned instead of raised."""
    data = data or {}
    base = previous if previous is not None else SLOControllerConfig()
    values: dict[str, Any] = {}
    errors: list[MalformedValueError] = []
    for key, (name, parser) in KEY_PARSERS.items():
        try:
            values[name] = parser(data.get(key), obj=obj)
        except MalformedValueError as err:
            errors.append(err)
    return replace(base, **values, extensions=_extension_keys(data)), errors


__all__ = [
    "COLOCATION_CONFIG_KEY", "CONFIG_NAMESPACE", "CPU_BURST_CONFIG_KEY",
    "CPU_NORMALIZATION_CONFIG_KEY", "HOST_APPLICATION_CONFIG_KEY", "KEY_PARSERS",
    "RESOURCE_AMPLIFICATION_CONFIG_KEY", "RESOURCE_QOS_CONFIG_KEY",
    "RESOURCE_THRESHOLD_CONFIG_KEY", "SLOControllerConfig", "SLO_CTRL_CONFIG_MAP",
    "SYSTEM_CONFIG_KEY", "decode_config_json", "parse_colocation_config", "parse_cpu_burst_config",
    "parse_cpu_normalization_config", "parse_host_application_config",
    "parse_resource_amplification_config", "parse_resource_qos_config",
    "parse_resource_threshold_config", "parse_slo_controller_config",
    "parse_slo_controller_config_lenient", "parse_system_config",
]
