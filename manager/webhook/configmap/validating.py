"""``/validate-configmap``: a bad slo-controller-config is refused before it is stored.

Corresponds to upstream ``pkg/webhook/cm/validating`` and its ``plugins/sloconfig`` checkers.
For each strategy key whose value is non-empty and changed:
JSON parse (``ParseConfigFail``), node entries need a parsable non-empty ``nodeSelector``
and the values must be in range (``ConfigParamInvalid``, reusing api/configuration's parsers),
names unique when ``--node-strategy-name-need-check``, no two node selectors overlap
(``NodeStrategiesOverlap``), no existing node matched by two entries (``ExistNodeConfict``).
Errors answer 400 with a JSON ``{reason, message}`` body. Beyond upstream, a value of any
slo-controller-config key nested deeper than ``MAX_JSON_DEPTH`` is refused (``ParseConfigFail``)
with the message koord-manager's parser gives (``decode_config_json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from api.configuration import (
    COLOCATION_CONFIG_KEY,
    CPU_BURST_CONFIG_KEY,
    RESOURCE_QOS_CONFIG_KEY,
    RESOURCE_THRESHOLD_CONFIG_KEY,
    SYSTEM_CONFIG_KEY,
)
from api.configuration.slo_controller_config import KEY_PARSERS, decode_config_json
from api.errors import MalformedValueError
from api.extension.codec import json_depth_error
from pkg.client import ApiError
from pkg.client.resources import NODES
from pkg.features.features import CONFIG_MAP_VALIDATING_WEBHOOK
from pkg.util.labels import InvalidSelectorError, Selector, parse_selector

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored
from ..cached_reader import Reader
from ..configuration import VALIDATE_CONFIGMAP
from ..framework import HandlerBuilder
from ..options import WebhookOptions

CHECKED_KEYS = (COLOCATION_CONFIG_KEY, RESOURCE_THRESHOLD_CONFIG_KEY, RESOURCE_QOS_CONFIG_KEY,
                SYSTEM_CONFIG_KEY, CPU_BURST_CONFIG_KEY)


class ConfigRejected(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    def body(self) -> str:
        return json.dumps({"reason": self.reason, "message": self.message})


def _node_entries(key: str, data: dict[str, Any]) -> list[Any]:
    entries = data.get("nodeConfigs" if key == COLOCATION_CONFIG_KEY else "nodeStrategies")
    return entries if isinstance(entries, list) else []


def _selectors(key: str, data: dict[str, Any]) -> list[tuple[str, Selector]]:
    out = []
    for i, entry in enumerate(_node_entries(key, data)):
        field_name = "nodeConfigs" if key == COLOCATION_CONFIG_KEY else "nodeStrategies"
        where = f"{key}: {field_name}[{i}].nodeSelector"
        sel = entry.get("nodeSelector") if isinstance(entry, dict) else None
        if not sel or not isinstance(sel, dict) or \
                not (sel.get("matchLabels") or sel.get("matchExpressions")):
            raise ConfigRejected("ConfigParamInvalid", f"{where}: Required value: "
                                                       f"nodeSelector can not be empty")
        try:
            out.append((str(entry.get("name") or f"#{i}"), parse_selector(sel)))
        except InvalidSelectorError as e:
            raise ConfigRejected("ConfigParamInvalid", f"{where}: Invalid value: {e}") from None
    return out


def _synthetic_label_sets(data_entries: list[Any]) -> list[dict[str, str]]:
    """matchLabels plus the i-th value of every matchExpressions list (upstream's overlap
    probe)."""
    out = []
    for entry in data_entries:
        sel = entry.get("nodeSelector") or {}
        exprs = [e for e in sel.get("matchExpressions") or [] if e.get("values")]
        width = max((len(e["values"]) for e in exprs), default=1)
        for i in range(width):
            labels = dict(sel.get("matchLabels") or {})
            for e in exprs:
                if e.get("operator") == "In":
                    labels[e["key"]] = e["values"][min(i, len(e["values"]) - 1)]
            out.append(labels)
    return out


@dataclass(slots=True)
class ConfigMapValidatingHandler:
    client: Reader  # the API client
    options: WebhookOptions = field(default_factory=WebhookOptions)

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "configmaps" or req.operation == "DELETE":
            return allowed()
        obj = req.object or {}
        md = obj.get("metadata") or {}
        if md.get("name") != self.options.slo_config_name or \
                (md.get("namespace") or req.namespace) != self.options.config_namespace:
            return allowed()
        try:
            self.validate(obj.get("data") or {}, (req.old_object or {}).get("data") or {},
                          obj=f"configmap {self.options.config_namespace}/"
                              f"{self.options.slo_config_name}")
        except ConfigRejected as e:
            return errored(400, e.body())
        return allowed()

    def validate(self, data: dict[str, Any], old: dict[str, Any],
                 obj: str | None = None) -> None:
        """Raises ConfigRejected; messages name ``obj`` (the ConfigMap) and the key as
        koord-manager's own parsing does (the same MalformedValueError text)."""
        multi: list[tuple[str, list[tuple[str, Selector]]]] = []
        for key in KEY_PARSERS.keys() - CHECKED_KEYS:
            # Not checked upstream, but JSON nested too deep is refused for every key: koord-
            # manager could only record that it keeps the last good value.
            text = data.get(key)
            if isinstance(text, str) and text != old.get(key) and json_depth_error(text):
                try:
                    decode_config_json(key, text, obj)  # raises: the manager's message
                except MalformedValueError as e:
                    raise ConfigRejected("ParseConfigFail", str(e)) from None
        for key in CHECKED_KEYS:
            text = data.get(key)
            if not text or text == old.get(key):
                continue
            try:
                parsed = decode_config_json(key, text, obj)
            except MalformedValueError as e:
                raise ConfigRejected("ParseConfigFail", str(e)) from None
            selectors = _selectors(key, parsed)
            try:
                KEY_PARSERS[key][1](text, obj=obj)
            except MalformedValueError as e:
                raise ConfigRejected("ConfigParamInvalid", str(e)) from None
            self._check_names(key, parsed)
            self._check_overlap(key, parsed, selectors)
            if len(selectors) > 1:
                multi.append((key, selectors))
        if multi:
            self._check_nodes(multi)

    def _check_names(self, key: str, parsed: dict[str, Any]) -> None:
        if not self.options.node_strategy_name_need_check:
            return
        seen: set[str] = set()
        for entry in _node_entries(key, parsed):
            name = entry.get("name") if isinstance(entry, dict) else None
            if not name:
                raise ConfigRejected("ConfigParamInvalid", f"{key}: node strategy name is "
                                                           f"required")
            if name in seen:
                raise ConfigRejected("ConfigParamInvalid", f"{key}: node strategy name "
                                                           f"{name!r} is duplicated")
            seen.add(name)

    @staticmethod
    def _check_overlap(key: str, parsed: dict[str, Any],
                       selectors: list[tuple[str, Selector]]) -> None:
        entries = _node_entries(key, parsed)
        for i, entry in enumerate(entries):
            for labels in _synthetic_label_sets([entry]):
                hits = [name for j, (name, sel) in enumerate(selectors)
                        if j != i and sel.matches(labels)]
                if hits:
                    raise ConfigRejected(
                        "NodeStrategiesOverlap",
                        f"{key}: node strategy {selectors[i][0]} overlaps with {hits[0]} "
                        f"(labels {labels})")

    def _check_nodes(self, multi: list[tuple[str, list[tuple[str, Selector]]]]) -> None:
        try:
            nodes = self.client.list_all(NODES).get("items") or []
        except ApiError as e:
            raise ConfigRejected("ListNodeFail", f"failed to list nodes: {e}") from None
        for node in nodes:
            check_node_conflict(node, multi)


def multi_strategy_selectors(data: dict[str, Any]) -> list[tuple[str, list[tuple[str, Selector]]]]:
    """The keys of a stored slo-controller-config with more than one node strategy, and their
    selectors. A key that is empty or does not parse is left out, as upstream's checkers that
    fail to initialise are (the ConfigMap webhook reports those when the ConfigMap is written).
    """
    out = []
    for key in CHECKED_KEYS:
        text = data.get(key)
        if not text:
            continue
        try:
            selectors = _selectors(key, decode_config_json(key, text))
        except (MalformedValueError, ConfigRejected):
            continue
        if len(selectors) > 1:
            out.append((key, selectors))
    return out


def check_node_conflict(node: dict[str, Any],
                        multi: list[tuple[str, list[tuple[str, Selector]]]]) -> None:
    """ConfigRejected(``ExistNodeConfict``) when one key has two node strategies matching the
    node's labels (upstream ``ExistNodeConflict``)."""
    md = node.get("metadata") or {}
    labels = md.get("labels") or {}
    for key, selectors in multi:
        hits = [name for name, sel in selectors if sel.matches(labels)]
        if len(hits) > 1:
            raise ConfigRejected(
                "ExistNodeConfict",
                f"{key}: node {md.get('name')} is matched by more than one node strategy: "
                f"{', '.join(hits)}")


HANDLER_BUILDERS = (
    HandlerBuilder(VALIDATE_CONFIGMAP, CONFIG_MAP_VALIDATING_WEBHOOK,
                   lambda ctx: ConfigMapValidatingHandler(ctx.client, ctx.options)),
)

__all__ = ["CHECKED_KEYS", "HANDLER_BUILDERS", "ConfigMapValidatingHandler", "ConfigRejected",
           "check_node_conflict", "multi_strategy_selectors"]
