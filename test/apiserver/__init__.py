"""An embedded Kubernetes API server for tests and the local cluster.

It speaks the real Kubernetes REST API (discovery, CRUD, list/watch with resourceVersion,
patch types, Table output, subresources status/binding/eviction/scale, CRDs) well enough that
unmodified clients, ``kubectl`` and the official ``kubernetes`` Python client, work against it.
There is no upstream Go package it mirrors one to one: it stands in for kube-apiserver (with
its watch cache) and the few controllers clients rely on. See README.md for what is and is not
implemented.

    from test.apiserver import start
    with start() as srv:            # HTTPS on 127.0.0.1, a free port
        subprocess.run(["kubectl", "--kubeconfig", srv.kubeconfig, "get", "ns"])
"""

from .server import Options, Server, ServerHandle, new_token, serve, start

__all__ = ["Options", "Server", "ServerHandle", "new_token", "serve", "start"]
