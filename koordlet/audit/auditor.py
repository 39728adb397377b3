"""koordlet's auditor: upstream ``pkg/koordlet/audit`` (``auditor.go``, ``config.go``).

Gate ``AuditEvents`` sets up the process's auditor (``setup``) on ``--audit-log-dir``;
otherwise ``event`` records nothing. Gate ``AuditEventsHTTPHandler`` serves ``/events`` on
koordlet's ``--addr``: the newest events first, ``size`` of them (default 256, over
``--audit-max-events-limit`` a 400), and a page token to go on from where the last page ended.
A token is a reader: at most ``--audit-max-concurrent-readers`` live (the oldest gives way) and
each expires 10 minutes after its last page; an unknown token or an expired one is a 409.

With ``Accept: application/json`` a page is ``{"NextPageToken": ..., "Events": [...]}``
(``NextPageToken`` empty once the end is reached); otherwise one event's JSON a line, and the
token in the ``Next-Page-Token`` header.

The producers call ``event(verbose, reason, message, ...)``: upstream's
``audit.V(n).Node()/Pod(ns, name)/Group(name).Reason(r).Message(m).Do()`` in one call. As
upstream: cpusuppress records each BE cpuset or quota it applies at verbose 1, the evictor each
pod it evicts at verbose 0 (before the eviction, with the strategy's reason and message).
Not recorded here: upstream's runtime-hook and cgroup-write events (verbose 2 to 5).
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from koordlet.audit.event_log import TYPE_NODE, Event, EventLogger, ReverseEventIterator
from pkg.server.server import Response

log = logging.getLogger(__name__)

JSON = "application/json; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
NEXT_PAGE_TOKEN_HEADER = "Next-Page-Token"
# Reasons of upstream's resourceexecutor/config.go the strategies record.
ADJUST_BE_BY_NODE_CPU_USAGE = "AdjustBEByNodeCPUUsage"


@dataclass(slots=True)
class Config:
    """Upstream ``audit.Config``; the first five are flags."""

    audit_log_dir: str = "/var/log/koordlet"
    audit_verbose: int = 3
    audit_max_disk_space_mb: int = 16
    audit_max_concurrent_readers: int = 4
    audit_max_events_limit: int = 2048
    active_reader_ttl_seconds: float = 600.0
    default_events_limit: int = 256
    ticker_seconds: float = 60.0

    def add_flags(self, parser: argparse._ActionsContainer) -> None:
        parser.add_argument("--audit-log-dir", default=self.audit_log_dir,
                            help="The dir of audit log")
        parser.add_argument("--audit-verbose", type=int, default=self.audit_verbose,
                            help="The verbose of the audit log")
        parser.add_argument("--audit-max-disk-space-mb", type=int,
                            default=self.audit_max_disk_space_mb,
                            help="Max disk space occupied of audit log")
        parser.add_argument("--audit-max-concurrent-readers", type=int,
                            default=self.audit_max_concurrent_readers,
                            help="Max concurrent readers of the audit log")
        parser.add_argument("--audit-max-events-limit", type=int,
                            default=self.audit_max_events_limit,
                            help="Max events one /events page returns")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Config:
        return cls(args.audit_log_dir, args.audit_verbose, args.audit_max_disk_space_mb,
                   args.audit_max_concurrent_readers, args.audit_max_events_limit)


@dataclass(slots=True)
class _Reader:
    token: str
    refreshed_at: float
    events: ReverseEventIterator
    lock: threading.Lock
    closed: bool = False


class Auditor:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.logger = EventLogger(config.audit_log_dir, config.audit_max_disk_space_mb,
                                  config.audit_verbose)
        self._lock = threading.Lock()
        self._readers: deque[_Reader] = deque()

    def log(self, verbose: int, event: Event) -> None:
        self.logger.log(verbose, event)

    # -- readers --------------------------------------------------------------------------

    def active_readers(self) -> int:
        with self._lock:
            return len(self._readers)

    def _find(self, token: str) -> _Reader | None:
        with self._lock:
            return next((r for r in self._readers if r.token == token), None)

    def _push(self, reader: _Reader) -> None:
        with self._lock:
            self._readers.append(reader)
            expired = self._pop_expired()
        self._close(expired)

    def _pop_expired(self) -> list[_Reader]:
        """Readers past their TTL, and the oldest beyond the concurrent-reader limit."""
        now, ttl = time.monotonic(), self.config.active_reader_ttl_seconds
        over = len(self._readers) - self.config.audit_max_concurrent_readers
        expired = []
        for reader in list(self._readers):
            if over > 0 or now > reader.refreshed_at + ttl:
                self._readers.remove(reader)
                expired.append(reader)
            over -= 1
        return expired

    @staticmethod
    def _close(readers: list[_Reader]) -> None:
        for reader in readers:
            log.info("reader %s is expired", reader.token)
            with reader.lock:
                reader.closed = True
                reader.events.close()

    def gc(self) -> None:
        with self._lock:
            expired = self._pop_expired()
        self._close(expired)

    def run(self, stop: threading.Event) -> None:
        """Expires idle readers every ``ticker_seconds`` (upstream ``Run``)."""
        while not stop.wait(self.config.ticker_seconds):
            self.gc()
        self.logger.close()

    # -- /events --------------------------------------------------------------------------

    def handle(self, query: dict[str, list[str]]) -> Response:
        """``GET /events?size=&pageToken=`` (a ``pkg.server`` handler)."""
        size_str = (query.get("size") or [""])[0]
        token = (query.get("pageToken") or [""])[0]
        log.info("handle query pageToken=%s size=%s", token, size_str)
        size = self.config.default_events_limit
        try:
            size = int(size_str)
        except ValueError:
            pass  # absent or not a number: the default, as upstream
        if size > self.config.audit_max_events_limit:
            return 400, TEXT, (f"size({size}) exceeds the limit"
                               f"({self.config.audit_max_events_limit})\n").encode()
        if size < 0:
            return 400, TEXT, f"size({size}) must not be negative\n".encode()
        if token:
            found = self._find(token)
            if found is None:
                return 409, TEXT, f"reader {token} is existed\n".encode()
            reader = found
        else:
            reader = _Reader(str(uuid.uuid4()), time.monotonic(),
                             ReverseEventIterator(self.config.audit_log_dir), threading.Lock())
            self._push(reader)
        events: list[Event] = []
        eof = False
        with reader.lock:
            if reader.closed:
                return 409, TEXT, f"reader {reader.token} is expired\n".encode()
            reader.refreshed_at = time.monotonic()
            while len(events) < size:
                e = reader.events.next()
                if e is None:
                    eof = True
                    break
                events.append(e)
        next_token = "" if eof else reader.token
        accept = (query.get("__accept__") or [""])[0]
        if "application/json" in [a.split(";")[0].strip() for a in accept.split(",")]:
            body = json.dumps({"NextPageToken": next_token,
                               "Events": [json.loads(e.to_json()) for e in events]})
            return 200, JSON, body.encode()
        text = "".join(e.to_json() + "\n" for e in events).encode()
        return 200, TEXT, text, ({NEXT_PAGE_TOKEN_HEADER: next_token} if next_token else {})


_default: Auditor | None = None


def setup(config: Config) -> Auditor:
    """Makes ``config``'s auditor the one ``event`` records to (upstream
    ``SetupDefaultAuditor``); the caller runs its ``run``."""
    global _default
    _default = Auditor(config)
    return _default


def reset() -> None:
    """Back to recording nothing (tests)."""
    global _default
    if _default is not None:
        _default.logger.close()
    _default = None


def default() -> Auditor | None:
    return _default


def handle(query: dict[str, list[str]]) -> Response:
    """``/events`` of the process's auditor; an empty page without one (upstream's empty
    auditor answers nothing)."""
    auditor = _default
    if auditor is None:
        return 200, TEXT, b""
    return auditor.handle(query)


def event(verbose: int, reason: str, message: str, *, kind: str = TYPE_NODE,
          namespace: str = "", name: str = "", container: str = "") -> None:
    """Records one event when an auditor is set up; never raises (as upstream's callers
    discard its error)."""
    auditor = _default
    if auditor is None:
        return
    try:
        auditor.log(verbose, Event(created_at=datetime.now().astimezone(), type=kind,
                                   namespace=namespace, name=name, container=container,
                                   reason=reason, message=message))
    except OSError as e:
        log.warning("audit event %s not recorded: %s", reason, e)
