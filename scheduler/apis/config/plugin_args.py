"""Which plugins have typed args, and decoding one ``pluginConfig[].args`` object.

Corresponds to ``PluginConfig.decodeNestedObjects`` of kube-scheduler's versioned config types
and to the args kinds kube-scheduler and Koordinator register in the
``kubescheduler.config.k8s.io`` scheme: the args of plugin ``X`` are of kind ``XArgs``; a plugin
whose args kind is not registered (out-of-tree, or none) keeps its args as raw JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from scheduler.apis.config.base import WIRE, PluginArgs
from scheduler.apis.config.errors import FieldError, validation_errors
from scheduler.apis.config.koord_args import KOORD_ARGS_KINDS
from scheduler.apis.config.kube_args import KUBE_ARGS_KINDS
from scheduler.apis.config.strict import unknown_fields
from scheduler.apis.config.types import API_VERSIONS

# Plugin name → the model of its args (kind: the model's class name).
ARGS_KINDS: dict[str, type[PluginArgs]] = {**KUBE_ARGS_KINDS, **KOORD_ARGS_KINDS}


def default_plugin_args(name: str, api_version: str) -> PluginArgs:
    """The defaulted args of plugin ``name`` (which must be in ARGS_KINDS)."""
    model = ARGS_KINDS[name]
    return model(api_version=api_version, kind=model.kind_name())


def decode_plugin_args(name: str, raw: dict[str, Any] | None, api_version: str
                       ) -> tuple[PluginArgs | dict[str, Any] | None, list[FieldError]]:
    """The args of plugin ``name`` from parsed JSON: typed and defaulted when the plugin's kind
    is known (missing args mean all defaults), else ``raw`` unchanged. Errors are located
    relative to the args object; the decoded args carry ``api_version`` and their kind."""
    model = ARGS_KINDS.get(name)
    if model is None:
        return raw, []
    return decode_args_of_kind(model, name, raw, api_version, API_VERSIONS)


def decode_args_of_kind(model: type[PluginArgs], name: str, raw: dict[str, Any] | None,
                        api_version: str, versions: Sequence[str]
                        ) -> tuple[PluginArgs | None, list[FieldError]]:
    """Plugin ``name``'s args as ``model`` (``PluginConfig.decodeNestedObjects``), for any
    component's configuration: their own ``kind``/``apiVersion`` must be the model's kind and
    one of ``versions``; unknown fields are errors. The args carry ``api_version``."""
    data = dict(raw or {})
    errors = []
    kind = data.pop("kind", model.kind_name())
    if kind != model.kind_name():
        errors.append(FieldError(("kind",), f"args for plugin {name} must be of kind "
                                 f"{model.kind_name()}, got {kind!r}"))
    given_version = data.pop("apiVersion", api_version)
    if given_version not in versions:
        errors.append(FieldError(("apiVersion",), (
            f"must be {versions[0]}, got {given_version!r}" if len(versions) == 1 else
            f"unsupported value {given_version!r}: must be one of {', '.join(versions)}")))
    errors += unknown_fields(model, data)
    if errors:
        return None, errors
    try:
        args = model.model_validate(data, by_name=False, context={WIRE: True})
    except ValidationError as err:
        return None, validation_errors(err)
    args.api_version, args.kind = api_version, model.kind_name()
    return args, []
