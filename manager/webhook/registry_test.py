"""The handler registry: each path builds its handler while its feature gate is on."""

from __future__ import annotations

from manager.webhook.cached_reader import Obj
from manager.webhook.configuration import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS
from manager.webhook.elasticquota.topology import QuotaTopology
from manager.webhook.framework import HandlerContext
from manager.webhook.node.mutating import NodeStatusMutatingHandler
from manager.webhook.options import WebhookOptions
from manager.webhook.pod.mutating import PodMutatingHandler
from manager.webhook.pod.validating import BindingAdmissionHandler
from manager.webhook.registry import HANDLER_BUILDERS
from manager.webhook.server import build_handlers
from pkg.client import Resource
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate


class NoClient:
    """Building a handler reads nothing."""

    def get(self, resource: Resource, name: str, namespace: str | None = None) -> Obj:
        raise AssertionError("building a handler reads nothing")

    def list_all(self, resource: Resource) -> Obj:
        raise AssertionError("building a handler reads nothing")


def test_paths_resolve_to_their_handlers_while_their_gate_is_on() -> None:
    gate = FeatureGate(DEFAULT_FEATURE_GATES)
    gate.set("NodeMutatingWebhook=true")
    handlers = build_handlers(HandlerContext(NoClient(), WebhookOptions(), gate,
                                             QuotaTopology(), NoClient()))
    assert type(handlers["/mutate-pod"]) is PodMutatingHandler
    assert type(handlers["/validate-pod-binding"]) is BindingAdmissionHandler
    assert type(handlers["/mutate-node-status"]) is NodeStatusMutatingHandler
    assert "/validate-node" not in handlers  # NodeValidatingWebhook is off by default


def test_every_configured_path_has_a_handler_behind_a_manager_gate() -> None:
    configured = {hook["clientConfig"]["service"]["path"]
                  for hook in (*MUTATING_WEBHOOKS, *VALIDATING_WEBHOOKS)}
    assert set(HANDLER_BUILDERS) == configured
    gate = FeatureGate(DEFAULT_FEATURE_GATES)
    assert [b.gate for b in HANDLER_BUILDERS.values() if not gate.known(b.gate)] == []
