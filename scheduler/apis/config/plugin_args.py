"""Which plugins have typed args, and decoding one ``pluginConfig[].args`` object.

Corresponds to ``PluginConfig.decodeNestedObjects`` of kube-scheduler's versioned config types
and to the args kinds kube-scheduler and Koordinator register in the
``kubescheduler.config.k8s.io`` scheme: the args of plugin ``X`` are of kind ``XArgs``; a plugin
whose args kind is not registered (out-of-tree, or none) keeps its args as raw JSON.
"""

from __future__ import annotations

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
    data = dict(raw or {})
    errors = []
    kind = data.pop("kind", model.kind_name())
    if kind != model.kind_name():
        errors.append(FieldError(("kind",), f"args for plugin {name} must be of kind "
                                 f"{model.kind_name()}, got {kind!r}"))
    given_version = data.pop("apiVersion", api_version)
    if given_version not in API_VERSIONS:
        errors.append(FieldError(("apiVersion",), f"unsupported value {given_version!r}: must "
                                 f"be one of {', '.join(API_VERSIONS)}"))
    errors += unknown_fields(model, data)
    if errors:
        return None, errors
    try:
        args = model.model_validate(data, by_name=False, context={WIRE: True})
    except ValidationError as err:
        return None, validation_errors(err)
    args.api_version, args.kind = api_version, model.kind_name()
    return args, []
