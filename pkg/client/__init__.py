"""Kubernetes API access for every component (client-go's ``rest``, ``dynamic`` and
``tools/clientcmd`` counterparts).

``Client`` is the fast JSON path: rate-limited REST verbs returning parsed JSON, with
``Client.typed(Model)`` for Koordinator CRDs as ``api`` models. ``load_config`` finds the
cluster (kubeconfig or in-cluster); ``resources`` names the REST paths of kinds. Informers live
in ``pkg.client.informers``.
"""

from pkg.client.config import (
    ClientOptions,
    ConfigError,
    add_client_flags,
    load_config,
    options_from_args,
)
from pkg.client.errors import ApiError, ConnectionFailure
from pkg.client.resources import Resource
from pkg.client.rest import Client, ResourceClient, WatchStream

__all__ = [
    "ApiError",
    "Client",
    "ClientOptions",
    "ConfigError",
    "ConnectionFailure",
    "Resource",
    "ResourceClient",
    "WatchStream",
    "add_client_flags",
    "load_config",
    "options_from_args",
]
