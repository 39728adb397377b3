"""koord-manager's admission webhooks (upstream ``pkg/webhook``), manager-descheduler.md 7.

Public API for ``manager/main.py``::

    from manager.webhook import WebhookOptions, WebhookServer, ensure_webhook_setup

    options = WebhookOptions.from_env(slo_config_name=args.slo_config_name,
                                      config_namespace=args.config_namespace)
    server = WebhookServer(client, options, default_feature_gate)   # every replica
    server.start()     # certs (Secret or cert dir) + configurations, then HTTPS on 9876
    ...
    server.stop()

``WebhookOptions.from_env`` reads WEBHOOK_PORT (default 9876; non-integer raises ValueError),
WEBHOOK_HOST, WEBHOOK_CERT_DIR, WEBHOOK_CERT_WRITER, POD_NAMESPACE, SECRET_NAME, SERVICE_NAME,
MUTATING_WEBHOOK_NAME and VALIDATING_WEBHOOK_NAME; keyword overrides carry the flags
(``--slo-config-name``, ``--config-namespace``, ``--node-strategy-name-need-check``,
``--binding-admission-*``). ``ensure_webhook_setup(client, options, paths)`` does the
certificate/configuration upkeep once (the server repeats it every minute).
``WebhookServer.port`` is the bound port; ``/healthz`` answers ``ok`` for readiness checks.

Paths (gates): ``/mutate-pod`` (PodMutatingWebhook), ``/validate-pod`` and
``/validate-pod-binding`` (PodValidatingWebhook), ``/mutate-...-elasticquota`` and
``/validate-...-elasticquota`` (ElasticMutating/ValidatingWebhook), ``/validate-configmap``
(ConfigMapValidatingWebhook), ``/mutate-node-status`` (NodeMutatingWebhook), ``/validate-node``
(NodeValidatingWebhook), ``/mutate-reservation`` (ReservationMutatingWebhook).
"""

from manager.webhook.options import WebhookOptions, split_list
from manager.webhook.server import WebhookServer, build_handlers, ensure_webhook_setup

__all__ = ["WebhookOptions", "WebhookServer", "build_handlers", "ensure_webhook_setup",
           "split_list"]
