"""Reading a DeschedulerConfiguration file into the effective configuration.

Corresponds to koord-descheduler's ``loadConfigFromFile``/``loadConfig``
(``cmd/koord-descheduler/app/options/configfile.go``): strict decoding of a
``DeschedulerConfiguration`` of apiVersion ``descheduler/v1alpha2`` (unknown and duplicate
fields are errors), plugin args decoded by kind (``PluginConfig.decodeNestedObjects``: the args
of plugin ``X`` are of kind ``XArgs`` when that kind is registered, else kept raw), defaulting,
then validation. Every problem is reported with the source and the JSON path of the field.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError

from descheduler.apis.config.args import ARGS_KINDS
from descheduler.apis.config.defaults import set_defaults
from descheduler.apis.config.types import KIND, V1ALPHA2, DeschedulerConfiguration
from descheduler.apis.config.validation import validate_config
from scheduler.apis.config.base import WIRE, PluginArgs
from scheduler.apis.config.errors import (
    FieldError,
    SchedulerConfigError,
    nest,
    validation_errors,
)
from scheduler.apis.config.plugin_args import decode_args_of_kind
from scheduler.apis.config.strict import drop_nulls, load_yaml, unknown_fields, yaml_problem


class DeschedulerConfigError(SchedulerConfigError):
    """A descheduler configuration that cannot be loaded: ``source`` names the file, ``errors``
    every problem found (decoding stops at the first stage that fails: YAML, then fields, then
    validation)."""


def load_descheduler_config(text: str, source: str | None = None) -> DeschedulerConfiguration:
    """The effective configuration (defaulted, plugins merged, args typed and defaulted) from
    the YAML or JSON ``text``; ``source`` (the file) names it in errors.

    Raises DeschedulerConfigError naming the source and each bad field.
    """
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        raise DeschedulerConfigError([FieldError((), f"malformed YAML: {yaml_problem(err)}")],
                                     source) from None
    return decode_descheduler_config(data, source=source)


def decode_descheduler_config(data: Any, *, source: str | None = None
                              ) -> DeschedulerConfiguration:
    """The effective configuration from parsed YAML/JSON (see ``load_descheduler_config``)."""
    errors = _type_meta_errors(data)
    if errors:
        raise DeschedulerConfigError(errors, source)
    data = drop_nulls(data)
    errors = unknown_fields(DeschedulerConfiguration, data)
    errors += _decode_args_in_place(data)
    try:
        config = DeschedulerConfiguration.model_validate(data, by_name=False,
                                                         context={WIRE: True})
    except ValidationError as err:
        raise DeschedulerConfigError(errors + validation_errors(err), source) from None
    if errors:
        raise DeschedulerConfigError(errors, source)
    set_defaults(config)
    errors = validate_config(config)
    if errors:
        raise DeschedulerConfigError(errors, source)
    return config


def decode_plugin_args(name: str, raw: dict[str, Any] | None
                       ) -> tuple[PluginArgs | dict[str, Any] | None, list[FieldError]]:
    """The args of plugin ``name``: typed and defaulted when its kind is known (missing args
    mean all defaults), else ``raw`` unchanged. Errors are located relative to the args."""
    model = ARGS_KINDS.get(name)
    if model is None:
        return raw, []
    return decode_args_of_kind(model, name, raw, V1ALPHA2, (V1ALPHA2,))


def _decode_args_in_place(data: dict[str, Any]) -> list[FieldError]:
    """Replace each well-formed ``pluginConfig[].args`` of a known kind by its typed args; what
    is not well-formed is left for the model's validation to report."""
    errors = []
    for i, profile in enumerate(_list(data.get("profiles"))):
        configs = profile.get("pluginConfig") if isinstance(profile, dict) else None
        for j, pc in enumerate(_list(configs)):
            if not isinstance(pc, dict) or not isinstance(pc.get("name"), str):
                continue
            raw = pc.get("args")
            if raw is not None and not isinstance(raw, dict):
                continue
            args, args_errors = decode_plugin_args(pc["name"], raw)
            errors += nest(("profiles", i, "pluginConfig", j, "args"), args_errors)
            if args is not None:
                pc["args"] = args
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _type_meta_errors(data: Any) -> list[FieldError]:
    if not isinstance(data, dict):
        return [FieldError((), f"expected a {KIND} object (a mapping), got "
                           f"{type(data).__name__}")]
    errors = []
    for field, want in (("apiVersion", V1ALPHA2), ("kind", KIND)):
        value = data.get(field)
        if not value:
            errors.append(FieldError((field,), "required"))
        elif value != want:
            errors.append(FieldError((field,), f"must be {want}, got {value!r}"))
    return errors
