"""Where the cluster is: kubeconfig or in-cluster configuration, and the client flags.

Corresponds to client-go ``tools/clientcmd`` (``BuildConfigFromFlags``) and ``rest.InClusterConfig``
as controller-runtime's ``config.GetConfig`` combines them. The lookup order is:

1. ``--kubeconfig`` (a path; ``:``-separated lists are merged like kubectl does);
2. ``$KUBECONFIG``;
3. the in-cluster service account (``KUBERNETES_SERVICE_HOST`` and the mounted token);
4. ``~/.kube/config``.

``--master`` overrides the server address of whichever configuration was found.
The ``kubernetes`` package does the parsing, authentication (tokens, client certificates, exec
plugins, token refresh) and TLS set-up.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config import incluster_config
from kubernetes.config.config_exception import ConfigException

DEFAULT_QPS = 5.0  # client-go's rest.Config defaults
DEFAULT_BURST = 10


class ConfigError(RuntimeError):
    """No usable cluster configuration was found."""


def in_cluster() -> bool:
    """Whether we run in a pod with a service account (the environment variables and the
    mounted token that ``rest.InClusterConfig`` needs)."""
    return bool(os.environ.get(incluster_config.SERVICE_HOST_ENV_NAME)) and os.path.exists(
        incluster_config.SERVICE_TOKEN_FILENAME)


def load_config(kubeconfig: str | None = None, *, context: str | None = None,
                master: str | None = None) -> k8s_client.Configuration:
    """A client ``Configuration`` (see the module docstring for the lookup order)."""
    cfg = k8s_client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        if path:
            k8s_config.load_kube_config(config_file=path, context=context,
                                        client_configuration=cfg, persist_config=False)
        elif in_cluster():
            k8s_config.load_incluster_config(client_configuration=cfg)
        else:
            home = os.path.expanduser("~/.kube/config")
            if os.path.exists(home):
                k8s_config.load_kube_config(config_file=home, context=context,
                                            client_configuration=cfg, persist_config=False)
            elif not master:
                raise ConfigError("no cluster configuration: pass --kubeconfig, set KUBECONFIG, "
                                  "or run in a pod with a service account")
    except (ConfigException, OSError) as e:
        raise ConfigError(f"cannot load cluster configuration from {path or 'the cluster'}: "
                          f"{e}") from e
    if master:
        cfg.host = master.rstrip("/")
    return cfg


@dataclass
class ClientOptions:
    """How to reach the API server, as the component flags give it."""

    kubeconfig: str | None = None
    master: str | None = None
    context: str | None = None
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    user_agent: str | None = None
    timeout: float = 60.0

    def load(self) -> k8s_client.Configuration:
        return load_config(self.kubeconfig, context=self.context, master=self.master)


def add_client_flags(parser: argparse.ArgumentParser, *, qps: float = DEFAULT_QPS,
                     burst: int = DEFAULT_BURST, qps_flag: str = "--kube-api-qps",
                     burst_flag: str = "--kube-api-burst", master: bool = True) -> None:
    """``--kubeconfig``, ``--master`` and the QPS/burst flags under the component's names
    (koordlet: ``--kube-api-qps`` 20 / ``--kube-api-burst`` 30; koord-manager:
    ``--rest-config-qps`` 30 / ``--rest-config-burst`` 50)."""
    parser.add_argument("--kubeconfig", default="",
                        help="Path to a kubeconfig. Only required if out-of-cluster.")
    if master:
        parser.add_argument("--master", default="",
                            help="The address of the Kubernetes API server. Overrides any "
                                 "value in kubeconfig. Only required if out-of-cluster.")
    parser.add_argument(qps_flag, dest="kube_api_qps", type=float, default=qps,
                        help="QPS to use while talking with the Kubernetes API server.")
    parser.add_argument(burst_flag, dest="kube_api_burst", type=int, default=burst,
                        help="Burst to use while talking with the Kubernetes API server.")


def options_from_args(args: argparse.Namespace, user_agent: str | None = None
                      ) -> ClientOptions:
    ns: dict[str, Any] = vars(args)
    return ClientOptions(kubeconfig=ns.get("kubeconfig") or None,
                         master=ns.get("master") or None,
                         qps=float(ns.get("kube_api_qps", DEFAULT_QPS)),
                         burst=int(ns.get("kube_api_burst", DEFAULT_BURST)),
                         user_agent=user_agent)


__all__ = [
    "DEFAULT_BURST", "DEFAULT_QPS", "ClientOptions", "ConfigError", "add_client_flags",
    "in_cluster", "load_config", "options_from_args",
]
