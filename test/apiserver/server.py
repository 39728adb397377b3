"""Starting and stopping the server: listeners, TLS, kubeconfig, background thread.

``start()`` runs the server's event loop in a daemon thread and returns a ``ServerHandle``
once it accepts connections; ``python -m test.apiserver`` runs the same in the foreground.
Given a workdir, a restart on it keeps what clients hold: the objects and resourceVersions
(``persistence.py``), the CA and serving certificate, a generated token (``token``) and a port
that 0 picked (``ports.json``, reused while it is free).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import ssl
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from aiohttp import web

from . import (
    admission,
    authn,
    bootstrap,
    certs,
    controllers,
    crds,
    gc,
    kubeconfig,
    persistence,
    rbac,
    workloads,
)
from .api import Api
from .handlers import Handlers
from .nodes import NodeSpec, SimulatedNodes
from .storage import Storage

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass
class Options:
    host: str = "127.0.0.1"
    port: int = 0  # HTTPS (or HTTP with tls=False) port; 0 picks a free one
    tls: bool = True
    http_port: int | None = None  # an extra plain-HTTP listener (0: any free port)
    token: str | None = None  # require "Authorization: Bearer <token>"
    random_token: bool = False  # without token: require a random one (kept in the workdir)
    kubeconfig: str | None = None  # where to write the kubeconfig (default: in workdir)
    # Certificates, kubeconfig and, when given, the objects kept across restarts (default: a
    # temporary dir, and nothing is kept).
    workdir: str | None = None
    watch_cache_size: int = 20_000  # events kept per resource for watch resumption
    bookmark_interval: float = 5.0  # seconds between BOOKMARK events on idle watches
    # Simulated kubelets (see nodes.py).
    lease_interval: float = 10.0  # node Lease renewal
    node_status_interval: float = 60.0  # node status heartbeat
    pod_start_delay: float = 0.0  # bound pod -> Running
    pod_termination_delay: float = 0.0  # graceful deletion -> gone


@dataclass
class Server:
    """A running server inside an event loop (the loop may be another thread's)."""

    options: Options
    api: Api
    handlers: Handlers
    runner: web.AppRunner
    url: str
    http_url: str | None
    kubeconfig: str
    ca_file: str | None
    token: str | None
    workdir: str
    nodes: SimulatedNodes
    webhooks: admission.Webhooks
    journal: persistence.Journal | None = None
    _tmp: tempfile.TemporaryDirectory[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    async def close(self) -> None:
        self.handlers.close_watchers()
        await self.runner.cleanup()
        await self.webhooks.close()
        if self.journal is not None:
            self.journal.close()
        if self._tmp is not None:
            self._tmp.cleanup()


def _listen(host: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError:
        s.close()
        raise
    s.listen(1024)
    s.setblocking(False)
    return s


def _listen_again(host: str, port: int, previous: object, what: str) -> socket.socket:
    """Listen on ``port``; when that is 0, on the ``previous`` run's port if it is free, so
    kubeconfigs written then stay valid."""
    if port == 0 and isinstance(previous, int) and previous > 0:
        try:
            return _listen(host, previous)
        except OSError as e:
            log.warning("%s: port %d of the previous run is taken (%s); serving on a new "
                        "port, and kubeconfigs written before name the old one", what,
                        previous, e.strerror)
    return _listen(host, port)


def _workdir_token(workdir: str) -> str:
    """The random token a previous run on ``workdir`` generated, else a new one, kept."""
    path = os.path.join(workdir, "token")
    try:
        with open(path) as f:
            token = f.read().strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    token = new_token()
    kubeconfig.write_private(path, token.encode())
    return token


async def serve(options: Options | None = None) -> Server:
    """Start listening on the running loop; returns once connections are accepted."""
    o = options or Options()
    tmp = None
    workdir = o.workdir
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="test-apiserver-")
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    api = Api(Storage(watch_capacity=o.watch_cache_size))
    if tmp is not None:
        return await _serve(o, workdir, api, None, tmp)
    journal = persistence.Journal(os.path.join(workdir, "data"))
    try:
        restored = journal.restore(api.storage)
        if restored:
            log.info("restored %d objects at resourceVersion %d from %s", restored,
                     api.storage.rv, journal.directory)
        return await _serve(o, workdir, api, journal, None)
    except BaseException:
        journal.close()
        raise


async def _serve(o: Options, workdir: str, api: Api, journal: persistence.Journal | None,
                 tmp: tempfile.TemporaryDirectory[str] | None) -> Server:
    ca_pem = None
    ssl_ctx = None
    files = None
    if o.tls:
        pki = os.path.join(workdir, "pki")
        files = certs.load_or_generate(pki)
        ca_pem = files.ca_pem()
        ssl_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        try:
            ssl_ctx.load_cert_chain(files.cert, files.key)
        except ssl.SSLError as e:
            raise persistence.PersistenceError(
                f"{files.cert}: cannot serve with this certificate and key ({e.reason}); "
                f"remove {pki} to mint a new CA, and give clients the new kubeconfig") from None
    token = o.token
    if token is None and o.random_token:
        token = _workdir_token(workdir)
    crds.install(api)
    controllers.install(api)
    workloads.install(api, gc.install(api).index)
    webhooks = admission.install(api)
    bootstrap.install(api, ca_pem)
    rbac.install_bootstrap_policy(api)
    authenticator = authn.install(api, workdir, token, ca_pem)
    authorizer = rbac.Authorizer(api)
    api.resume()
    sim = SimulatedNodes(api, o.lease_interval, o.node_status_interval, o.pod_start_delay,
                         o.pod_termination_delay)
    ports_path = os.path.join(workdir, "ports.json")
    previous = _previous_ports(ports_path)
    main_sock = _listen_again(o.host, o.port, previous.get("port"), "serving")
    port = main_sock.getsockname()[1]
    handlers = Handlers(api, authenticator, authorizer, f"{o.host}:{port}", o.bookmark_interval)
    app = web.Application(client_max_size=16 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handlers.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False,
                           handler_cancellation=True, shutdown_timeout=2.0)
    await runner.setup()
    await web.SockSite(runner, main_sock, ssl_context=ssl_ctx).start()
    scheme = "https" if o.tls else "http"
    url = f"{scheme}://{o.host}:{port}"
    http_url = None
    ports = {"port": port}
    if o.http_port is not None and o.tls:
        hs = _listen_again(o.host, o.http_port, previous.get("http_port"), "plain HTTP")
        await web.SockSite(runner, hs).start()
        ports["http_port"] = hs.getsockname()[1]
        http_url = f"http://{o.host}:{ports['http_port']}"
    elif not o.tls:
        http_url = url
    kubeconfig.write_private(ports_path, orjson.dumps(ports))
    kc = o.kubeconfig or os.path.join(workdir, "kubeconfig")
    kubeconfig.write(kc, url, ca_pem, token)
    return Server(o, api, handlers, runner, url, http_url, kc,
                  files.ca_cert if files else None, token, workdir, sim, webhooks, journal,
                  tmp)


def _previous_ports(path: str) -> dict[str, object]:
    """The ports the previous run on this workdir served on (empty when unknown)."""
    try:
        with open(path, "rb") as f:
            ports = orjson.loads(f.read())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {}
    return ports if isinstance(ports, dict) else {}


class ServerHandle:
    """A server running in a background thread."""

    def __init__(self, server: Server, loop: asyncio.AbstractEventLoop,
                 thread: threading.Thread) -> None:
        self.server = server
        self.loop = loop
        self.thread = thread

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def http_url(self) -> str | None:
        return self.server.http_url

    @property
    def kubeconfig(self) -> str:
        return self.server.kubeconfig

    @property
    def ca_file(self) -> str | None:
        return self.server.ca_file

    @property
    def token(self) -> str | None:
        return self.server.token

    @property
    def api(self) -> Api:
        """The server's Api; only touch it from the server loop (see ``call``)."""
        return self.server.api

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float = 30) -> T:
        """Run a coroutine function on the server's loop and wait for its result."""
        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def add_nodes(self, count: int = 1, prefix: str = "node-", start: int = 0,
                  **spec: Any) -> list[str]:
        """Register simulated nodes ``<prefix><n>``; ``spec`` holds NodeSpec fields (cpu,
        memory, pods, labels, taints, ...). Returns their names."""
        names = [f"{prefix}{i}" for i in range(start, start + count)]

        async def run() -> None:
            for n in names:
                await self.server.nodes.register(NodeSpec(name=n, **spec))

        self.call(run)
        return names

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        fut = asyncio.run_coroutine_threadsafe(self.server.close(), self.loop)
        try:
            fut.result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(options: Options | None = None, **kw: Any) -> ServerHandle:
    """Start a server in a daemon thread. Keyword arguments are ``Options`` fields."""
    if options is None:
        options = Options(**kw)
    elif kw:
        raise TypeError("pass either options or keyword arguments")
    loop = asyncio.new_event_loop()
    ready: dict[str, Any] = {}
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            ready["server"] = loop.run_until_complete(serve(options))
        except BaseException as e:  # noqa: BLE001 - reported to the caller
            ready["error"] = e
            started.set()
            return
        started.set()
        try:
            loop.run_forever()
        finally:
            pending = asyncio.all_tasks(loop)
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=run, name="test-apiserver", daemon=True)
    thread.start()
    started.wait(30)
    if "error" in ready:
        raise ready["error"]
    if "server" not in ready:
        raise TimeoutError("the API server did not start")
    return ServerHandle(ready["server"], loop, thread)


def new_token() -> str:
    return secrets.token_urlsafe(24)
