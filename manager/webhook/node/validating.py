"""``/validate-node``: a label change must not put a node under two node strategies.

Corresponds to upstream ``pkg/webhook/node/validating`` with its plugin
``plugins/sloconfig`` (``SLOManagerConfigConflictForNode``). When a
node is created or its labels change, the slo-controller-config's node strategies are matched
against the new labels; one config key with more than one matching strategy is refused with
reason ``ExistNodeConfict`` (400, JSON ``{reason, message}`` as the ConfigMap webhook).
CREATE only logs the conflict and is allowed, as upstream. A ConfigMap that cannot be read
allows the request: the node must not be blocked by a missing config.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pkg.client import ApiError
from pkg.client.resources import CONFIGMAPS
from pkg.features.features import NODE_VALIDATING_WEBHOOK

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored
from ..cached_reader import Reader
from ..configmap.validating import ConfigRejected, check_node_conflict, multi_strategy_selectors
from ..configuration import VALIDATE_NODE
from ..framework import HandlerBuilder
from ..options import WebhookOptions

log = logging.getLogger(__name__)


@dataclass(slots=True)
class NodeValidatingHandler:
    client: Reader  # the API client
    options: WebhookOptions = field(default_factory=WebhookOptions)

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "nodes" or req.sub_resource or req.operation not in ("CREATE",
                                                                                "UPDATE"):
            return allowed()
        node = req.object
        if node is None:
            return errored(400, "node validating webhook: request has no object")
        if req.operation == "UPDATE":
            old_labels = ((req.old_object or {}).get("metadata") or {}).get("labels") or {}
            if old_labels == ((node.get("metadata") or {}).get("labels") or {}):
                return allowed()
        try:
            self.check(node)
        except ConfigRejected as e:
            log.error("node %s conflicts with %s/%s: %s", req.name,
                      self.options.config_namespace, self.options.slo_config_name, e.message)
            if req.operation == "UPDATE":
                return errored(400, e.body())
        return allowed()

    def check(self, node: dict) -> None:
        try:
            cm = self.client.get(CONFIGMAPS, self.options.slo_config_name,
                                 self.options.config_namespace)
        except ApiError as e:
            log.error("failed to get %s/%s: %s", self.options.config_namespace,
                      self.options.slo_config_name, e)
            return
        check_node_conflict(node, multi_strategy_selectors(cm.get("data") or {}))


HANDLER_BUILDERS = (
    HandlerBuilder(VALIDATE_NODE, NODE_VALIDATING_WEBHOOK,
                   lambda ctx: NodeValidatingHandler(ctx.client, ctx.options)),
)


__all__ = ["HANDLER_BUILDERS", "NodeValidatingHandler"]
