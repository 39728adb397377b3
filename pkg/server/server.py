"""The HTTP endpoints every component serves: ``/healthz``, ``/readyz`` and ``/metrics``.

Corresponds to controller-runtime's probe and metrics servers (``pkg/healthz``,
``pkg/metrics/server``) and apiserver's ``healthz`` handlers, as the components mount them.
Health and readiness answer ``200 ok`` when every registered check passes and ``500`` with a
per-check report otherwise; ``?verbose`` always gives the report, ``?exclude=name`` skips a
check, and ``/healthz/<name>`` runs one check. ``/metrics`` exposes a prometheus-client
registry (OpenMetrics when the scraper asks for it). A check is a function that returns
``None`` (or an empty string) when healthy and raises or returns an error message otherwise.

Components that serve probes and metrics on different ports (koord-manager: ``:8000`` and
``:8080``) start two servers with ``health=``/``metrics=`` switched accordingly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import choose_encoder

log = logging.getLogger(__name__)

Check = Callable[[], str | None]
# A handler gets the query and returns (status, content type, body), and optionally headers.
Response = tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]
Handler = Callable[[dict[str, list[str]]], Response]


def parse_address(addr: str, default_port: int = 0) -> tuple[str, int]:
    """``":8080"``, ``"0.0.0.0:10251"``, ``"127.0.0.1"`` or ``"[::1]:80"`` → (host, port); an
    empty host means every interface."""
    addr = addr.strip()
    if addr.startswith("["):
        host, _, rest = addr[1:].partition("]")
        port = rest.lstrip(":")
    elif addr.count(":") == 1:
        host, _, port = addr.partition(":")
    elif ":" in addr:  # a bare IPv6 address
        host, port = addr, ""
    else:
        host, port = addr, ""
    try:
        p = int(port) if port else default_port
    except ValueError:
        raise ValueError(f"invalid port in address {addr!r}") from None
    if not 0 <= p <= 65535:
        raise ValueError(f"port out of range in address {addr!r}")
    return host or "0.0.0.0", p


class Checks:
    """Named checks for one endpoint (``/healthz`` or ``/readyz``)."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._checks: dict[str, Check] = {"ping": lambda: None}
        self._lock = threading.Lock()

    def add(self, name: str, check: Check) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid check name {name!r}")
        with self._lock:
            if name in self._checks and name != "ping":
                raise ValueError(f"check {name!r} already registered on {self.endpoint}")
            self._checks[name] = check

    def names(self) -> list[str]:
        with self._lock:
            return list(self._checks)

    def run(self, only: str | None = None, exclude: frozenset[str] = frozenset()
            ) -> tuple[bool, list[tuple[str, str | None]]]:
        with self._lock:
            checks = list(self._checks.items())
        results: list[tuple[str, str | None]] = []
        for name, fn in checks:
            if (only is not None and name != only) or name in exclude:
                continue
            try:
                err = fn() or None
            except Exception as e:  # noqa: BLE001 - a failing check is a result
                err = str(e) or type(e).__name__
            results.append((name, err))
        return all(err is None for _, err in results), results


class Server:
    """A small threaded HTTP server for probes, metrics and extra handlers."""

    def __init__(self, address: str = ":0", *, registry: CollectorRegistry = REGISTRY,
                 health: bool = True, metrics: bool = True) -> None:
        self.host, self.requested_port = parse_address(address)
        self.registry = registry
        self.healthz = Checks("healthz")
        self.readyz = Checks("readyz")
        self._handlers: dict[str, Handler] = {}
        self._subtrees: dict[str, Handler] = {}
        if health:
            self._handlers["/healthz"] = self._probe(self.healthz)
            self._handlers["/readyz"] = self._probe(self.readyz)
        if metrics:
            self._handlers["/metrics"] = self._metrics(registry)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def add_healthz_check(self, name: str, check: Check) -> None:
        self.healthz.add(name, check)

    def add_readyz_check(self, name: str, check: Check) -> None:
        self.readyz.add(name, check)

    def add_handler(self, path: str, handler: Handler, *, subtree: bool = False) -> None:
        """Serve ``handler`` at ``path`` (``/configz``, ``/external-metrics``, ...).

        With ``subtree``, also every path below it (``/debug/pods/<ns>/<name>``); the rest of
        the path reaches the handler as ``query["__subpath__"]``.
        """
        self._handlers[path] = handler
        if subtree:
            self._subtrees[path.rstrip("/")] = handler

    def add_metrics_path(self, path: str, registry: CollectorRegistry) -> None:
        self._handlers[path] = self._metrics(registry)

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                server._serve(self)

            def do_HEAD(self) -> None:  # noqa: N802
                server._serve(self, head=True)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("%s %s", self.address_string(), format % args)

        self._httpd = ThreadingHTTPServer((self.host, self.requested_port), _Handler)
        self._httpd.daemon_threads = True
        httpd = self._httpd
        self._thread = threading.Thread(target=lambda: httpd.serve_forever(0.05),
                                        daemon=True, name=f"http-{self.port}")
        self._thread.start()
        log.info("serving %s on %s", ", ".join(sorted(self._handlers)), self.url)

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(5)
            self._httpd = None

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handlers -------------------------------------------------------------------------

    def _serve(self, req: BaseHTTPRequestHandler, head: bool = False) -> None:
        parts = urlsplit(req.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        query["__accept__"] = [req.headers.get("Accept", "")]
        path = parts.path.rstrip("/") or "/"
        handler = self._handlers.get(path)
        if handler is None:
            base, _, sub = path.rpartition("/")
            probe = {"/healthz": self.healthz, "/readyz": self.readyz}.get(base)
            if probe is not None and base in self._handlers and sub:
                handler = self._probe(probe, only=sub)
        if handler is None:
            prefix = path
            while handler is None and "/" in prefix.strip("/"):
                prefix = prefix.rsplit("/", 1)[0]
                handler = self._subtrees.get(prefix)
            if handler is not None:
                query["__subpath__"] = [path[len(prefix) + 1:]]
        response: Response
        if handler is None:
            response = 404, "text/plain; charset=utf-8", b"404 page not found\n"
        else:
            try:
                response = handler(query)
            except Exception:  # noqa: BLE001
                log.exception("handler for %s failed", path)
                response = 500, "text/plain; charset=utf-8", b"internal error\n"
        status, ctype, body = response[:3]
        req.send_response(status)
        for name, value in (response[3] if len(response) > 3 else {}).items():
            req.send_header(name, value)
        req.send_header("Content-Type", ctype)
        req.send_header("Content-Length", str(len(body)))
        req.send_header("X-Content-Type-Options", "nosniff")
        req.end_headers()
        if not head:
            req.wfile.write(body)

    @staticmethod
    def _probe(checks: Checks, only: str | None = None) -> Handler:
        def handle(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
            exclude = frozenset(query.get("exclude", []))
            if only is not None and only not in checks.names():
                return 404, "text/plain; charset=utf-8", b"404 page not found\n"
            ok, results = checks.run(only, exclude)
            verbose = "verbose" in query
            text = "text/plain; charset=utf-8"
            if only is not None:
                err = results[0][1] if results else None
                if err is None:
                    return 200, text, b"ok"
                return 500, text, f"internal server error: {err}\n".encode()
            if ok and not verbose:
                return 200, text, b"ok"
            lines = []
            for name, err in results:
                lines.append(f"[+]{name} ok" if err is None else
                             f"[-]{name} failed: reason withheld" if not verbose else
                             f"[-]{name} failed: {err}")
            for name in sorted(exclude):
                lines.append(f"warn: some health checks cannot be excluded: no matches for "
                             f"\"{name}\"" if name not in checks.names() else
                             f"[+]{name} excluded: ok")
            lines.append(f"{checks.endpoint} check passed" if ok else
                         f"{checks.endpoint} check failed")
            if not ok:
                failed = [n for n, e in results if e is not None]
                log.info("%s check failed: %s", checks.endpoint,
                         "; ".join(f"{n}: {e}" for n, e in results if n in failed))
            return (200 if ok else 500), text, ("\n".join(lines) + "\n").encode()

        return handle

    @staticmethod
    def _metrics(registry: CollectorRegistry) -> Handler:
        def handle(query: dict[str, list[str]]) -> tuple[int, str, bytes]:
            encoder, ctype = choose_encoder(query.get("__accept__", [""])[0])
            return 200, ctype, encoder(registry)

        return handle


def leader_election_check(elector: Any, max_tolerable_expired_lease: float = 20.0) -> Check:
    """The healthz watchdog of a ``LeaderElector`` (client-go ``HealthzAdaptor``)."""

    def check() -> str | None:
        result: str | None = elector.check(max_tolerable_expired_lease)
        return result

    return check


__all__ = ["Check", "Checks", "Handler", "Response", "Server", "leader_election_check",
           "parse_address"]
