"""Node webhooks: ``/mutate-node-status`` and ``/validate-node`` (upstream ``pkg/webhook/node``)."""
