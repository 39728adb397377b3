"""The ``webhook-ready`` readiness check (upstream ``pkg/webhook/server.go``: ``Checker``)."""

from __future__ import annotations

import os
import ssl
import urllib.request

from manager.webhook.certs import CA_CERT
from manager.webhook.server import WebhookServer
from pkg.server.server import Check


def webhook_ready_check(server: WebhookServer) -> Check:
    """``GET https://localhost:<port>/healthz`` trusting only the generated CA (read from the
    cert dir on every check, so a rotated CA is picked up)."""

    def check() -> str | None:
        ctx = ssl.create_default_context(
            cafile=os.path.join(server.options.cert_dir, CA_CERT))
        # The serving certificate names the Service (or WEBHOOK_HOST), not localhost.
        ctx.check_hostname = False
        url = f"https://127.0.0.1:{server.port}/healthz"
        with urllib.request.urlopen(url, timeout=2, context=ctx) as resp:
            return None if resp.status == 200 else f"{url}: HTTP {resp.status}"

    return check
