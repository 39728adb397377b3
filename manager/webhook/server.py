"""The HTTPS webhook server every koord-manager replica runs, and its certificate and
configuration upkeep.

Corresponds to upstream ``pkg/webhook/server.go`` (the handlers of ``registry`` whose gate is
on, ``/healthz``), ``pkg/webhook/util/controller`` (the background loop that keeps the Secret,
the cert dir and both webhook configurations current, resync one minute) and
controller-runtime's webhook server (TLS from the cert dir, AdmissionReview decoding).

Who writes the configurations: in service mode (no WEBHOOK_HOST) every replica, as upstream;
they all write the same Service and the shared Secret's CA, and the Service routes to any ready
replica. In URL mode (WEBHOOK_HOST) a configuration names one replica's port and CA, so
replicas writing in turn would leave it on whichever wrote last, dead or not: there only the
leader writes (``WebhookServer.keep_configurations``, run leader-bound), at once when it starts
leading, so the API server follows a failover within one lease period. Every replica serves.

The ElasticQuota tree is fed by an informer on every replica (a standby must answer reviews
too); admission never changes it.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from api.extension.codec import json_nesting_exceeds
from api.extension.elastic_quota import LABEL_QUOTA_NAME
from pkg.client import ApiError, Client
from pkg.client.informers.handlers import EventHandlerFuncs, deleted_object
from pkg.client.resources import (
    CLUSTER_COLOCATION_PROFILES,
    ELASTIC_QUOTA_PROFILES,
    ELASTIC_QUOTAS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
)
from pkg.events import EventBroadcaster
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import MULTI_QUOTA_TREE

from . import certs
from .admission import AdmissionRequest, Handler, errored
from .cached_reader import CachedReader
from .configuration import ensure_configurations
from .elasticquota.topology import QuotaInfo, QuotaTopology
from .framework import HandlerContext
from .options import CERT_WRITER_FS, WebhookOptions
from .registry import HANDLER_BUILDERS

log = logging.getLogger(__name__)

# How long start() waits for the ElasticQuota informer before serving anyway (the API server
# may be down; the quota checks then see the tree as it fills).
QUOTA_SYNC_TIMEOUT = 10.0
# Retry period of a failed configuration write by the leader.
CONFIGURATION_RETRY = 1.0


def ensure_certs(client: Client, options: WebhookOptions) -> certs.Artifacts:
    """Certificates in the Secret (or the cert dir), written to the cert dir."""
    if options.writer == CERT_WRITER_FS:
        return certs.ensure_dir(options.cert_dir, options.dns_name)
    artifacts = certs.ensure_secret(client, options.namespace, options.secret_name,
                                    options.dns_name)
    certs.write_dir(options.cert_dir, artifacts)
    return artifacts


def ensure_webhook_setup(client: Client, options: WebhookOptions,
                         paths: list[str] | tuple[str, ...]) -> certs.Artifacts:
    """``ensure_certs``, then both webhook configurations carrying their CA bundle for
    ``paths``."""
    artifacts = ensure_certs(client, options)
    ensure_configurations(client, options, artifacts.ca_bundle(), paths)
    return artifacts


def _quota_exists(client: Client) -> Callable[[str], bool | None]:
    def exists(name: str) -> bool | None:
        try:
            found = client.list(ELASTIC_QUOTAS, field_selector=f"metadata.name={name}")
        except ApiError as e:
            log.warning("looking up ElasticQuota %s: %s", name, e)
            return None
        return bool(found.get("items"))
    return exists


def _pods_of(client: Client) -> Callable[[QuotaInfo], list[str]]:
    def pods(q: QuotaInfo) -> list[str]:
        names: list[str] = []
        try:
            for pod in client.list_all(PODS, label_selector=f"{LABEL_QUOTA_NAME}={q.name}"
                                       ).get("items") or []:
                names.append(pod["metadata"]["name"])
            for ns in {q.name, *q.namespaces}:
                for pod in client.list_all(PODS, ns).get("items") or []:
                    if pod["metadata"]["name"] not in names:
                        names.append(pod["metadata"]["name"])
        except ApiError as e:
            log.error("listing pods of quota %s: %s", q.name, e)
        return names
    return pods


def build_handlers(ctx: HandlerContext) -> dict[str, Handler]:
    """Path → handler for the registered paths whose gate is on (upstream
    ``filterActiveHandlers``)."""
    return {path: builder.build(ctx) for path, builder in HANDLER_BUILDERS.items()
            if ctx.gate.enabled(builder.gate)}


# orjson's parser crashes the process near 100,000 levels: a forged review is measured first.
# The API server sends at most its storable depth (240) plus the review's own levels.
MAX_REVIEW_DEPTH = 1000


def serve_review(handler: Handler, body: bytes) -> tuple[int, bytes]:
    """One AdmissionReview in, one out; a body that is not a review is an errored 400."""
    try:
        if json_nesting_exceeds(body, MAX_REVIEW_DEPTH):
            raise ValueError(f"nested more than {MAX_REVIEW_DEPTH} levels deep")
        review = orjson.loads(body)
        req = AdmissionRequest.from_review(review)
    except (orjson.JSONDecodeError, ValueError) as e:
        resp = errored(400, f"cannot decode AdmissionReview: {e}")
        return 200, orjson.dumps(resp.to_review(""))
    api_version = review.get("apiVersion") or "admission.k8s.io/v1"
    try:
        resp = handler(req)
    except Exception as e:  # noqa: BLE001 - a handler bug must not take the server down
        log.exception("webhook handler failed for %s %s", req.operation, req.resource)
        resp = errored(500, f"internal error: {e}")
    return 200, orjson.dumps(resp.to_review(req.uid, api_version))


class WebhookServer:
    """HTTPS on ``options.bind_address:options.port`` serving the enabled webhooks.

    ``start()`` ensures certificates (and in service mode the configurations), waits for the
    ElasticQuota informer, starts serving and a background loop that repeats the upkeep every
    ``options.resync_seconds``; ``stop()`` ends both. In URL mode
    (``leader_writes_configurations``) the leader runs ``keep_configurations``.
    """

    def __init__(self, client: Client, options: WebhookOptions | None = None,
                 gate: FeatureGate = default_feature_gate, *,
                 manage_configurations: bool = True) -> None:
        self.client = client
        self.options = options or WebhookOptions.from_env()
        self.gate = gate
        self.manage_configurations = manage_configurations
        self.topology = QuotaTopology(pods_of=_pods_of(client), gate=gate,
                                      exists=_quota_exists(client))
        # What upstream's cached client serves the profile webhooks from; its ElasticQuota
        # informer is the only thing that changes the quota tree.
        cached = [CLUSTER_COLOCATION_PROFILES, NAMESPACES, PRIORITY_CLASSES, ELASTIC_QUOTAS]
        if gate.enabled(MULTI_QUOTA_TREE):  # the pod webhook reads the trees' node pools
            cached.append(ELASTIC_QUOTA_PROFILES)
        self.reader = CachedReader(client, cached)
        self._quota_feed = self.reader.informer(ELASTIC_QUOTAS).add_event_handler(
            EventHandlerFuncs(add=self.topology.on_add_or_update,
                              update=lambda _old, new: self.topology.on_add_or_update(new),
                              delete=lambda obj: self.topology.on_delete(deleted_object(obj))))
        self.events = EventBroadcaster(client)
        self.handlers = build_handlers(
            HandlerContext(client, self.options, gate, self.topology, self.reader,
                           self.events.new_recorder("koord-manager")))
        self._ssl: ssl.SSLContext | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._cert: certs.Artifacts | None = None

    @property
    def port(self) -> int:
        """The bound port (the real one when options.port was 0)."""
        return self._httpd.server_address[1] if self._httpd else self.options.port

    @property
    def leader_writes_configurations(self) -> bool:
        """URL mode: the configurations name one replica, so only the leader writes them."""
        return self.manage_configurations and bool(self.options.host)

    def sync(self) -> None:
        """Certificates (and in service mode the configurations) brought up to date once."""
        if self.manage_configurations:
            artifacts = ensure_certs(self.client, self.options)
            if not self.leader_writes_configurations:
                ensure_configurations(self.client, self.options, artifacts.ca_bundle(),
                                      list(self.handlers))
        else:
            found = certs.read_dir(self.options.cert_dir)
            if found is None:
                raise RuntimeError(f"no certificates in {self.options.cert_dir}")
            artifacts = found
        if artifacts != self._cert and self._ssl is not None:
            self._load(artifacts)
        self._cert = artifacts

    def keep_configurations(self, stop: threading.Event) -> None:
        """Point both configurations at this replica (its URL and CA bundle) now and every
        resync until ``stop``; a failed write is retried every ``CONFIGURATION_RETRY``
        seconds. The leader's task in URL mode (after ``start``)."""
        wait, written = 0.0, False
        while not stop.wait(wait):
            assert self._cert is not None, "keep_configurations before start"
            try:
                ensure_configurations(self.client, self.options, self._cert.ca_bundle(),
                                      list(self.handlers))
            except Exception as e:  # noqa: BLE001 - keep trying; requests are still served
                log.error("writing the webhook configurations failed: %s", e)
                wait = CONFIGURATION_RETRY
                continue
            if not written:
                log.info("webhook configurations point at https://%s:%d", self.options.host,
                         self.port)
                written = True
            wait = self.options.resync_seconds

    def _load(self, artifacts: certs.Artifacts) -> None:
        certs.write_dir(self.options.cert_dir, artifacts)
        assert self._ssl is not None
        self._ssl.load_cert_chain(os.path.join(self.options.cert_dir, certs.SERVER_CERT),
                                  os.path.join(self.options.cert_dir, certs.SERVER_KEY))

    def start(self) -> None:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, the body waits for the
            # API server's delayed ACK (~40 ms per webhook call, two calls per pod create).
            disable_nagle_algorithm = True

            def log_message(self, fmt: str, *args: Any) -> None:
                log.debug(fmt, *args)

            def _reply(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path == "/healthz":
                    self._reply(200, b"ok", "text/plain")
                else:
                    self._reply(404, b"not found", "text/plain")

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                handler = server.handlers.get(self.path.split("?", 1)[0])
                if handler is None:
                    self._reply(404, b"not found", "text/plain")
                    return
                code, out = serve_review(handler, body)
                self._reply(code, out)

        httpd = ThreadingHTTPServer((self.options.bind_address, self.options.port), _Handler)
        httpd.daemon_threads = True
        if self.options.port == 0:
            # Port 0 picks a free port; the configurations must name the real one.
            self.options.port = httpd.server_address[1]
        self.sync()
        assert self._cert is not None
        self._ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._load(self._cert)
        httpd.socket = self._ssl.wrap_socket(httpd.socket, server_side=True)
        self._httpd = httpd
        self._stop.clear()
        self.reader.start()  # until its informers sync, reads go to the API server
        if not self._quota_feed.wait_for_sync(QUOTA_SYNC_TIMEOUT):
            log.warning("ElasticQuota informer not synced after %gs; serving anyway",
                        QUOTA_SYNC_TIMEOUT)
        for target, name in ((httpd.serve_forever, "webhook-server"),
                             (self._resync_loop, "webhook-cert-controller")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        log.info("webhook server serving %s on port %d", sorted(self.handlers), self.port)

    def _resync_loop(self) -> None:
        while not self._stop.wait(self.options.resync_seconds):
            try:
                self.sync()
            except Exception as e:  # noqa: BLE001 - keep serving with the last good certs
                log.error("webhook certificate/configuration sync failed: %s", e)

    def stop(self) -> None:
        self._stop.set()
        self.reader.stop()
        self.events.shutdown(timeout=2)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._threads.clear()


__all__ = ["WebhookServer", "build_handlers", "ensure_certs", "ensure_webhook_setup",
           "serve_review"]
