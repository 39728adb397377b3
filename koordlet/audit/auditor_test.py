"""The auditor through a real HTTP server (upstream ``auditor_test.go``'s cases), and the log's
rotation bounds (``event_logger_test.go``)."""

from __future__ import annotations

import glob
import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from koordlet.audit import auditor as audit
from koordlet.audit.auditor import Auditor, Config
from koordlet.audit.event_log import Event, EventLogger, ReverseEventIterator
from pkg.server.server import Server

BLOCKS = [chr(ord("a") + i) * 63 for i in range(26)]


@pytest.fixture()
def logged(tmp_path: Path) -> Auditor:
    """26 node events of 63 characters each, "a…" the oldest."""
    auditor = Auditor(Config(audit_log_dir=str(tmp_path)))
    for block in BLOCKS:
        auditor.log(0, Event(type="node", message=block))
    return auditor


@pytest.fixture()
def server(logged: Auditor) -> Iterator[Server]:
    with Server("127.0.0.1:0", health=False, metrics=False) as srv:
        srv.add_handler("/events", logged.handle)
        yield srv


def get(srv: Server, size: int | None = None, token: str = "",
        json_: bool = True) -> tuple[int, dict[str, str], bytes]:
    query = [f"size={size}"] if size is not None else []
    query += [f"pageToken={token}"] if token else []
    req = urllib.request.Request(f"{srv.url}/events?{'&'.join(query)}")
    if json_:
        req.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def page(srv: Server, size: int, token: str = "") -> dict[str, Any]:
    status, _, body = get(srv, size, token)
    assert status == 200, body
    result: dict[str, Any] = json.loads(body)
    return result


def test_pages_go_from_the_newest_to_the_oldest(server: Server) -> None:
    first = page(server, 10)
    assert [e["message"] for e in first["Events"]] == BLOCKS[:-11:-1]
    assert first["Events"][0]["type"] == "node" and "createdAt" not in first["Events"][0]
    second = page(server, 1, first["NextPageToken"])
    assert second["NextPageToken"] == first["NextPageToken"]
    assert [e["message"] for e in second["Events"]] == [BLOCKS[-11]]
    count, token = 0, second["NextPageToken"]
    while token:
        rest = page(server, 5, token)
        count += len(rest["Events"])
        token = rest["NextPageToken"]
    assert count == len(BLOCKS) - 11


def test_text_output_has_a_line_an_event_and_the_token_header(server: Server) -> None:
    status, headers, body = get(server, 10, json_=False)
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    lines = body.decode().splitlines()
    assert [json.loads(line)["message"] for line in lines] == BLOCKS[:-11:-1]
    assert headers["Next-Page-Token"]
    # The last page names no token.
    status, headers, body = get(server, 100, headers["Next-Page-Token"], json_=False)
    assert len(body.decode().splitlines()) == 16 and "Next-Page-Token" not in headers


def test_default_size_and_the_limit(server: Server) -> None:
    assert len(page(server, 2048)["Events"]) == 26
    status, _, _ = get(server)
    assert status == 200
    status, _, body = get(server, 2049)
    assert (status, body) == (400, b"size(2049) exceeds the limit(2048)\n")


def test_expired_and_unknown_tokens_are_conflicts(logged: Auditor, server: Server) -> None:
    token = page(server, 10)["NextPageToken"]
    logged.config.active_reader_ttl_seconds = 0
    logged.gc()
    assert logged.active_readers() == 0
    status, _, body = get(server, 10, token)
    assert (status, body) == (409, f"reader {token} is existed\n".encode())
    status, _, _ = get(server, 10, "not-exists-token")
    assert status == 409


def test_at_most_max_concurrent_readers(logged: Auditor, server: Server) -> None:
    tokens = [page(server, 1)["NextPageToken"] for _ in range(logged.config
                                                              .audit_max_concurrent_readers + 5)]
    assert logged.active_readers() == 4
    assert get(server, 1, tokens[0])[0] == 409
    assert page(server, 1, tokens[-1])["Events"][0]["message"] == BLOCKS[-2]


def test_a_reader_keeps_its_view_across_a_rotation(tmp_path: Path) -> None:
    logger = EventLogger(str(tmp_path), 1, 0, max_file_size=1 << 18)
    logger.log(0, Event(message="before"))
    reader = ReverseEventIterator(str(tmp_path))
    for i in range(6000):  # several rotations, the first file removed
        logger.log(0, Event(message=f"{i:0200d}"))
    fresh = ReverseEventIterator(str(tmp_path))
    while (e := fresh.next()) is not None:
        assert e.message != "before"
    first = reader.next()
    assert first is not None and first.message == "before" and reader.next() is None


def test_rotation_keeps_the_disk_bound_and_the_newest_events(tmp_path: Path) -> None:
    """1 MiB in 256 KiB files: at most 4 files, audit.log included, never over the bound."""
    logger = EventLogger(str(tmp_path), 1, 3, max_file_size=1 << 18)
    for i in range(6000):
        logger.log(0, Event(message=f"{i:0200d}"))
        logger.log(5, Event(message="over the verbose"))
        files = glob.glob(str(tmp_path / "audit*.log"))
        assert len(files) <= 4
    logger.close()
    assert sum(os.path.getsize(f) for f in files) <= 1 << 20
    reader = ReverseEventIterator(str(tmp_path))
    messages = []
    while (e := reader.next()) is not None:
        messages.append(e.message)
    assert messages[0] == f"{5999:0200d}"
    # Contiguous from the newest back: nothing lost in between, the oldest removed.
    assert messages == [f"{i:0200d}" for i in range(5999, 5999 - len(messages), -1)]
    assert len(messages) < 6000


def test_event_records_only_once_set_up(tmp_path: Path) -> None:
    audit.event(0, "Reason", "nothing set up: dropped")
    auditor = audit.setup(Config(audit_log_dir=str(tmp_path)))
    try:
        audit.event(1, "EvictPod", "evicted", kind="pod", namespace="ns", name="p")
        audit.event(4, "UpdateCgroups", "over the default verbose 3: dropped")
        reader = ReverseEventIterator(str(tmp_path))
        e = reader.next()
        assert e is not None and reader.next() is None
        assert (e.type, e.namespace, e.name, e.reason, e.message) == (
            "pod", "ns", "p", "EvictPod", "evicted")
        assert e.created_at is not None and e.created_at.tzinfo is not None
        assert auditor is audit.default()
    finally:
        audit.reset()
    assert audit.handle({}) == (200, "text/plain; charset=utf-8", b"")
