"""This node's pods from kubelet (upstream ``pkg/koordlet/statesinformer/impl/states_pods.go``
and ``kubelet_stub.go``).

``KubeletStub`` answers ``GET <scheme>://<node address>:<port>/pods/`` with the PodList's
items and ``/configz`` with kubelet's configuration (``kubeletconfig``): plain HTTP to
``--kubelet-read-only-port`` with ``--kubelet-insecure-tls``, otherwise HTTPS to the node's
``status.daemonEndpoints.kubeletEndpoint.Port`` with the kubeconfig's credentials and no
server-certificate check, as upstream. ``KubeletPodsInformer`` syncs every
``--kubelet-sync-interval``; a failed request, a malformed body or an empty list keeps the
previous pods, and every successful sync calls ``on_sync`` (the ``AllPods`` callback).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
import urllib3

from pkg.client.rest import Client
from pkg.util.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

ADDRESS_TYPES = ("Hostname", "ExternalDNS", "InternalDNS", "InternalIP", "ExternalIP")
DEFAULT_ADDRESS_TYPE = "InternalIP"


@dataclass(slots=True)
class KubeletConfig:
    """Upstream ``statesinformer/impl/config.go`` kubelet flags (seconds)."""

    preferred_address_type: str = DEFAULT_ADDRESS_TYPE
    sync_interval: float = 10.0
    sync_timeout: float = 3.0
    insecure_tls: bool = False
    read_only_port: int = 10255


class KubeletError(Exception):
    """kubelet could not be asked, or its answer was not a PodList."""


def node_address(node: dict[str, Any], preferred: str) -> str:
    """The node address of the preferred type; an unknown type means InternalIP (upstream)."""
    if preferred not in ADDRESS_TYPES:
        preferred = DEFAULT_ADDRESS_TYPE
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == preferred and addr.get("address"):
            return str(addr["address"])
    raise KubeletError(f"node {node.get('metadata', {}).get('name')} has no {preferred} "
                       "address in status.addresses")


def parse_pod_list(body: bytes) -> list[dict[str, Any]]:
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise KubeletError(f"kubelet /pods/ body is not JSON: {e}") from None
    items = obj.get("items") if isinstance(obj, dict) else None
    if items is None:
        items = []
    if not isinstance(items, list) or not all(isinstance(p, dict) and "metadata" in p
                                              for p in items):
        raise KubeletError("kubelet /pods/ body is not a PodList (items must be pods)")
    return items


class KubeletStub:
    def __init__(self, config: KubeletConfig, client: Client | None = None) -> None:
        self.config = config
        self.client = client
        # kubelet serves a self-signed certificate; upstream skips the check too.
        self._pool = urllib3.PoolManager(
            cert_reqs="CERT_NONE",
            cert_file=getattr(client.configuration, "cert_file", None) if client else None,
            key_file=getattr(client.configuration, "key_file", None) if client else None)

    def url(self, node: dict[str, Any], path: str = "/pods/") -> str:
        host = node_address(node, self.config.preferred_address_type)
        if ":" in host:
            host = f"[{host}]"
        if self.config.insecure_tls:
            return f"http://{host}:{self.config.read_only_port}{path}"
        port = (((node.get("status") or {}).get("daemonEndpoints") or {})
                .get("kubeletEndpoint") or {}).get("Port")
        if not port:
            raise KubeletError("node has no status.daemonEndpoints.kubeletEndpoint.Port")
        return f"https://{host}:{port}{path}"

    def _headers(self) -> dict[str, str]:
        if self.client is None or self.config.insecure_tls:
            return {"Accept": "application/json"}
        # The API client's headers carry the kubeconfig's (refreshed) bearer token.
        return self.client._headers(None, "application/json")  # noqa: SLF001

    def _get(self, node: dict[str, Any], path: str) -> bytes:
        url = self.url(node, path)
        try:
            resp = self._pool.request("GET", url, headers=self._headers(), retries=False,
                                      timeout=self.config.sync_timeout)
        except urllib3.exceptions.HTTPError as e:
            raise KubeletError(f"GET {url}: {e}") from None
        if resp.status != 200:
            raise KubeletError(f"GET {url}: HTTP {resp.status}")
        return bytes(resp.data)

    def get_all_pods(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        return parse_pod_list(self._get(node, "/pods/"))

    def get_kubelet_configuration(self, node: dict[str, Any]) -> dict[str, Any]:
        """The ``kubeletconfig`` object of ``/configz`` (kubelet's KubeletConfiguration)."""
        try:
            obj = orjson.loads(self._get(node, "/configz"))
        except orjson.JSONDecodeError as e:
            raise KubeletError(f"kubelet /configz body is not JSON: {e}") from None
        config = obj.get("kubeletconfig") if isinstance(obj, dict) else None
        if not isinstance(config, dict):
            raise KubeletError("kubelet /configz body has no kubeletconfig object")
        return config


class KubeletPodsInformer:
    """Polls kubelet; ``pods()`` is the last good list."""

    def __init__(self, stub: KubeletStub, get_node: Callable[[], dict[str, Any] | None],
                 on_sync: Callable[[], None], clock: Clock = REAL_CLOCK) -> None:
        self.stub = stub
        self.get_node = get_node
        self.on_sync = on_sync
        self.clock = clock
        self._pods: list[dict[str, Any]] = []
        self._synced = threading.Event()

    def pods(self) -> list[dict[str, Any]]:
        return self._pods

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def sync(self) -> bool:
        """One sync; True when the pods were replaced (and the callback fired)."""
        node = self.get_node()
        if node is None:
            log.info("kubelet pods sync skipped: node not synced yet")
            return False
        name = node.get("metadata", {}).get("name")
        try:
            pods = self.stub.get_all_pods(node)
        except KubeletError as e:
            log.warning("get pods of node %s from kubelet failed, keeping %d pods: %s",
                        name, len(self._pods), e)
            return False
        if not pods:
            log.info("kubelet returned no pods for node %s, keeping %d pods", name,
                     len(self._pods))
            self._synced.set()
            return False
        self._pods = pods
        self._synced.set()
        self.on_sync()
        return True

    def run(self, stop: threading.Event) -> None:
        interval = self.stub.config.sync_interval
        if interval <= 0:
            log.info("--kubelet-sync-interval <= 0: kubelet pods informer disabled")
            self._synced.set()
            return
        while not stop.is_set():
            try:
                self.sync()
            except Exception:  # one bad round must not end the informer
                log.exception("kubelet pods sync failed")
            # Until the first good sync (the node may not be known yet), retry every second
            # so startup does not wait a whole interval.
            delay = interval if self.has_synced() else min(interval, 1.0)
            if self.clock.sleep(delay, stop):
                return
