"""Webhook server settings from the environment and koord-manager's flags.

Corresponds to upstream ``pkg/webhook/util`` (``GetHost``, ``GetPort``, ``GetNamespace``,
``GetSecretName``, ``GetServiceName``, ``GetCertDir``, ``GetCertWriter``, the configuration
names) and the webhook-related flags of ``cmd/koord-manager/options``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from api.configuration import CONFIG_NAMESPACE, SLO_CTRL_CONFIG_MAP

DEFAULT_PORT = 9876
DEFAULT_CERT_DIR = "/tmp/koordinator-webhook-certs"
DEFAULT_NAMESPACE = "koordinator-system"
DEFAULT_SECRET_NAME = "koordinator-webhook-certs"
DEFAULT_SERVICE_NAME = "koordinator-webhook-service"
DEFAULT_MUTATING_NAME = "koordinator-mutating-webhook-configuration"
DEFAULT_VALIDATING_NAME = "koordinator-validating-webhook-configuration"
CERT_WRITER_FS = "fs"
CERT_WRITER_SECRET = "secret"


@dataclass(slots=True)
class WebhookOptions:
    """Where the server listens, where its certificates live, what it registers."""

    port: int = DEFAULT_PORT
    bind_address: str = "0.0.0.0"
    host: str = ""
    cert_dir: str = DEFAULT_CERT_DIR
    cert_writer: str = ""
    namespace: str = DEFAULT_NAMESPACE
    secret_name: str = DEFAULT_SECRET_NAME
    service_name: str = DEFAULT_SERVICE_NAME
    mutating_name: str = DEFAULT_MUTATING_NAME
    validating_name: str = DEFAULT_VALIDATING_NAME
    # The slo-controller-config the ConfigMap and node webhooks check (--slo-config-name,
    # --config-namespace) and --node-strategy-name-need-check.
    slo_config_name: str = SLO_CTRL_CONFIG_MAP
    config_namespace: str = CONFIG_NAMESPACE
    node_strategy_name_need_check: bool = False
    # --binding-admission-* (upstream InitBindingAdmissionFlags, pod/validating).
    binding_user_names: tuple[str, ...] = ()
    binding_dry_run: bool = False
    binding_namespaces: tuple[str, ...] = ()
    binding_exclude_namespaces: tuple[str, ...] = ("kube-system",)
    binding_bypass_labels: tuple[str, ...] = ("koordinator.sh/binding-admission-bypass",)
    binding_bypass_annotations: tuple[str, ...] = ()
    # Resync period of the certificate/configuration controller (upstream: one minute).
    resync_seconds: float = 60.0

    @property
    def writer(self) -> str:
        """``fs`` when forced or when WEBHOOK_HOST is set, else ``secret`` (upstream
        GetCertWriter)."""
        if self.cert_writer:
            return self.cert_writer
        return CERT_WRITER_FS if self.host else CERT_WRITER_SECRET

    @property
    def dns_name(self) -> str:
        return self.host or f"{self.service_name}.{self.namespace}.svc"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object
                 ) -> WebhookOptions:
        """Options from WEBHOOK_* and friends; a non-integer WEBHOOK_PORT raises ValueError
        (upstream exits)."""
        env = os.environ if env is None else env
        port_text = env.get("WEBHOOK_PORT", "")
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"WEBHOOK_PORT must be an integer, got {port_text!r}") from None
        values: dict[str, object] = {
            "port": port,
            "host": env.get("WEBHOOK_HOST", ""),
            "cert_dir": env.get("WEBHOOK_CERT_DIR") or DEFAULT_CERT_DIR,
            "cert_writer": env.get("WEBHOOK_CERT_WRITER", ""),
            "namespace": env.get("POD_NAMESPACE") or DEFAULT_NAMESPACE,
            "secret_name": env.get("SECRET_NAME") or DEFAULT_SECRET_NAME,
            "service_name": env.get("SERVICE_NAME") or DEFAULT_SERVICE_NAME,
            "mutating_name": env.get("MUTATING_WEBHOOK_NAME") or DEFAULT_MUTATING_NAME,
            "validating_name": env.get("VALIDATING_WEBHOOK_NAME") or DEFAULT_VALIDATING_NAME,
        }
        values.update(overrides)
        # values holds many fields (overrides may name any of them): only a dict[str, object].
        return cls(**values)  # type: ignore[arg-type]


def split_list(value: str) -> tuple[str, ...]:
    """A comma-separated flag value as a tuple, blanks dropped."""
    return tuple(part.strip() for part in value.split(",") if part.strip())


__all__ = ["CERT_WRITER_FS", "CERT_WRITER_SECRET", "DEFAULT_PORT", "WebhookOptions",
           "split_list"]
