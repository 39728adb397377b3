"""Loading koord-scheduler's configuration file into the effective configuration.

Corresponds to kube-scheduler's ``LoadConfigFromFile`` (``cmd/kube-scheduler/app/options``):
strict decoding of a ``KubeSchedulerConfiguration`` of apiVersion
``kubescheduler.config.k8s.io/v1beta2``, ``v1beta3`` or ``v1``, plugin args decoded by kind,
defaulting, then validation. Every problem is reported with the file and the JSON path of the
field; extenders are kept without comment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from scheduler.apis.config.base import WIRE
from scheduler.apis.config.defaults import set_defaults
from scheduler.apis.config.errors import (
    FieldError,
    Loc,
    SchedulerConfigError,
    nest,
    one_of,
    validation_errors,
)
from scheduler.apis.config.plugin_args import decode_plugin_args
from scheduler.apis.config.strict import drop_nulls, load_yaml, unknown_fields, yaml_problem
from scheduler.apis.config.types import (
    API_VERSIONS,
    FIELDS_NOT_IN_VERSION,
    KIND,
    KubeSchedulerConfiguration,
)
from scheduler.apis.config.validation import validate_config


def load_scheduler_config(path_or_text: str | os.PathLike[str], *,
                          source: str | None = None) -> KubeSchedulerConfiguration:
    """The effective configuration (defaulted, plugins merged, args typed and defaulted) from a
    file, or from YAML text: a ``str`` with a line break or starting with ``{``. ``source``
    names the text's origin in errors (a file is named by its path).

    Raises SchedulerConfigError naming the source and each bad field.
    """
    text, source = _read(path_or_text, source)
    try:
        data = load_yaml(text)
    except yaml.YAMLError as err:
        raise SchedulerConfigError([FieldError((), f"malformed YAML: {yaml_problem(err)}")],
                                   source) from None
    return decode_scheduler_config(data, source=source)


def decode_scheduler_config(data: Any, *, source: str | None = None
                            ) -> KubeSchedulerConfiguration:
    """The effective configuration from parsed YAML/JSON (see ``load_scheduler_config``)."""
    errors = _type_meta_errors(data)
    if errors:
        raise SchedulerConfigError(errors, source)
    data = drop_nulls(data)
    api_version = data["apiVersion"]
    errors = _fields_not_in_version(data, api_version)
    errors += unknown_fields(KubeSchedulerConfiguration, data)
    errors += _decode_args_in_place(data, api_version)
    try:
        config = KubeSchedulerConfiguration.model_validate(data, by_name=False,
                                                           context={WIRE: True})
    except ValidationError as err:
        raise SchedulerConfigError(errors + validation_errors(err), source) from None
    if errors:
        raise SchedulerConfigError(errors, source)
    set_defaults(config)
    errors = validate_config(config)
    if errors:
        raise SchedulerConfigError(errors, source)
    return config


def _decode_args_in_place(data: dict[str, Any], api_version: str) -> list[FieldError]:
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
            args, args_errors = decode_plugin_args(pc["name"], raw, api_version)
            errors += nest(("profiles", i, "pluginConfig", j, "args"), args_errors)
            if args is not None:
                pc["args"] = args
    return errors


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _read(path_or_text: str | os.PathLike[str], source: str | None) -> tuple[str, str | None]:
    if isinstance(path_or_text, str) and ("\n" in path_or_text
                                          or path_or_text.lstrip().startswith("{")):
        return path_or_text, source
    path = Path(path_or_text)
    try:
        return path.read_text(encoding="utf-8"), source or str(path)
    except (OSError, UnicodeDecodeError) as err:
        reason = err.strerror if isinstance(err, OSError) else str(err)
        raise SchedulerConfigError([FieldError((), f"cannot read the file: {reason}")],
                                   source or str(path)) from None


def _type_meta_errors(data: Any) -> list[FieldError]:
    if not isinstance(data, dict):
        return [FieldError((), f"expected a {KIND} object (a mapping), got "
                           f"{type(data).__name__}")]
    errors = []
    api_version, kind = data.get("apiVersion"), data.get("kind")
    if not api_version:
        errors.append(FieldError(("apiVersion",), "required"))
    else:
        errors += one_of(("apiVersion",), api_version, API_VERSIONS)
    if not kind:
        errors.append(FieldError(("kind",), "required"))
    elif kind != KIND:
        errors.append(FieldError(("kind",), f"must be {KIND}, got {kind!r}"))
    return errors


def _fields_not_in_version(data: dict[str, Any], api_version: str) -> list[FieldError]:
    return [FieldError(loc, f"unknown field (not in {api_version})")
            for path in FIELDS_NOT_IN_VERSION[api_version]
            for loc in _locations(data, path.split("."), ())]


def _locations(data: Any, parts: list[str], loc: Loc) -> list[Loc]:
    """Where the dotted ``parts`` path (``"[]"``: every list item) exists in ``data``."""
    if not parts:
        return [loc]
    key, is_list = parts[0].removesuffix("[]"), parts[0].endswith("[]")
    if not isinstance(data, dict) or key not in data:
        return []
    value = data[key]
    if not is_list:
        return _locations(value, parts[1:], loc + (key,))
    if not isinstance(value, list):
        return []
    return [found for i, item in enumerate(value)
            for found in _locations(item, parts[1:], loc + (key, i))]
