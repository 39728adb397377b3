"""koord-manager's admission webhooks (upstream ``pkg/webhook``).

Public API for ``manager/main.py``::

    from manager.webhook import WebhookOptions, WebhookServer, ensure_webhook_setup

    options = WebhookOptions.from_env(slo_config_name=args.slo_config_name,
                                      config_namespace=args.config_namespace)
    server = WebhookServer(client, options, default_feature_gate)   # every replica
    server.start()     # certs (Secret or cert dir) + configurations, then HTTPS on 9876
    if server.leader_writes_configurations:   # WEBHOOK_HOST: they name one replica by URL
        runner.task("webhook-configurations", server.keep_configurations, leader=True)
    ...
    server.stop()

``WebhookOptions.from_env`` reads WEBHOOK_PORT (default 9876; non-integer raises ValueError),
WEBHOOK_HOST, WEBHOOK_CERT_DIR, WEBHOOK_CERT_WRITER, POD_NAMESPACE, SECRET_NAME, SERVICE_NAME,
MUTATING_WEBHOOK_NAME and VALIDATING_WEBHOOK_NAME; keyword overrides carry the flags
(``--slo-config-name``, ``--config-namespace``, ``--node-strategy-name-need-check``,
``--binding-admission-*``). ``ensure_webhook_setup(client, options, paths)`` does the
certificate/configuration upkeep once (the server repeats it every minute).
``WebhookServer.port`` is the bound port; ``/healthz`` answers ``ok`` for readiness checks.

The paths, the gate of each and their handlers: ``registry`` (``HANDLER_BUILDERS``), collected
from the handler modules, each of which declares its own (``framework.HandlerBuilder``).
"""

from manager.webhook.options import WebhookOptions, split_list
from manager.webhook.server import WebhookServer, build_handlers, ensure_webhook_setup

__all__ = ["WebhookOptions", "WebhookServer", "build_handlers", "ensure_webhook_setup",
           "split_list"]
