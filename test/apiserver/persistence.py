"""Keeping the embedded API server's objects across restarts on one workdir.

Stands in for etcd's durability (upstream ``go.etcd.io/etcd/server/storage/wal``, the write-ahead
log, and ``.../storage/mvcc`` snapshots): every committed write is appended to a log before any
client hears of it, and the whole store is compacted into a snapshot on a clean stop and when
the log has grown as large as the last snapshot; a write that cannot be logged is refused
(500) and not applied. Owns the files under ``<workdir>/data``:

    snapshot  line 1 {"rv": N}; then one [group, plural, namespaced, key, object] per line
    wal       one [rv, "P", group, plural, namespaced, key, object] (put) or
              [rv, "D", group, plural, namespaced, key] (delete) per line, appended
    lock      flock'ed while a server uses the directory

Loading reads the snapshot, then the log records newer than it. A torn last record (the process
was killed in the middle of a write) is dropped with a log line; any other unreadable record is
a ``PersistenceError`` naming the file and line, before anything is served.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os

import orjson

from . import errors
from .storage import Collection, SavedCollection, Storage, object_key
from .watch import Event

log = logging.getLogger(__name__)

# The log is compacted once it is at least this large and at least as large as the snapshot,
# so compaction costs O(1) per logged byte and small stores are not rewritten often.
MIN_COMPACT_BYTES = 16 * 1024 * 1024


class PersistenceError(RuntimeError):
    """A workdir that cannot be used: unreadable records or certificates, or in use by another
    server."""


class Journal:
    """The write-ahead log and snapshot of one Storage."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.min_compact_bytes = MIN_COMPACT_BYTES
        self.snapshot_path = os.path.join(directory, "snapshot")
        self.wal_path = os.path.join(directory, "wal")
        os.makedirs(directory, exist_ok=True)
        self._lock = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock)
            raise PersistenceError(f"{directory} is in use by another API server") from None
        self._wal = -1
        self._wal_bytes = 0
        self._snapshot_bytes = 0
        self._compacting = False
        self._storage: Storage | None = None

    # -- loading ------------------------------------------------------------------------------

    def restore(self, storage: Storage) -> int:
        """Load what the previous process kept into ``storage`` (which must be empty), then log
        every write it commits. Returns the number of objects restored."""
        rv, saved = self._read_snapshot()
        rv = self._replay_wal(rv, saved)
        storage.restore(rv, saved)
        self._storage = storage
        self._wal = os.open(self.wal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._wal_bytes = os.fstat(self._wal).st_size
        storage.before_write.append(self._record)
        return sum(len(s.items) for s in saved.values())

    def _read_snapshot(self) -> tuple[int, dict[tuple[str, str], SavedCollection]]:
        saved: dict[tuple[str, str], SavedCollection] = {}
        try:
            with open(self.snapshot_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return 0, saved
        self._snapshot_bytes = len(data)
        lines = data.split(b"\n")
        try:
            rv = int(orjson.loads(lines[0])["rv"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise PersistenceError(f"{self.snapshot_path}:1: unreadable header: {e}") from None
        # The snapshot is renamed into place whole, so every line must read.
        for n, line in enumerate(lines[1:], 2):
            if not line:
                continue
            try:
                group, plural, namespaced, key, obj = orjson.loads(line)
            except (orjson.JSONDecodeError, ValueError) as e:
                raise PersistenceError(f"{self.snapshot_path}:{n}: unreadable object: {e}") \
                    from None
            _saved(saved, group, plural, namespaced).items[key] = obj
        return rv, saved

    def _replay_wal(self, rv: int, saved: dict[tuple[str, str], SavedCollection]) -> int:
        try:
            with open(self.wal_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return rv
        # Each record is written whole with its newline last, so only a trailing piece
        # without one can be torn; an unreadable complete line is damage, not a torn write.
        lines = data.split(b"\n")
        torn = lines.pop()
        for n, line in enumerate(lines, 1):
            try:
                rec = orjson.loads(line)
                rec_rv, op, group, plural, namespaced, key = rec[:6]
            except (orjson.JSONDecodeError, TypeError, ValueError) as e:
                raise PersistenceError(f"{self.wal_path}:{n}: unreadable record: {e}") from None
            if rec_rv <= rv:
                continue  # already in the snapshot (a stop between snapshot and truncation)
            rv = rec_rv
            items = _saved(saved, group, plural, namespaced).items
            if op == "P":
                items[key] = rec[6]
            else:
                items.pop(key, None)
        if torn:
            log.warning("%s: dropped a torn last record (%d bytes) after an unclean stop; "
                        "resourceVersion %d is the last one kept", self.wal_path, len(torn), rv)
            os.truncate(self.wal_path, len(data) - len(torn))
        return rv

    # -- writing ------------------------------------------------------------------------------

    def _record(self, c: Collection, ev: Event) -> None:
        if self._wal < 0:
            return  # a write after the final snapshot (a controller finishing up) is not kept
        md = ev.new.obj["metadata"]
        key = object_key(md.get("namespace") if c.namespaced else None, md["name"])
        head = [ev.rv, "D" if ev.type == "DELETED" else "P", c.gr[0], c.gr[1], c.namespaced, key]
        if ev.type == "DELETED":
            line = orjson.dumps(head) + b"\n"
        else:
            line = orjson.dumps(head)[:-1] + b"," + ev.new.raw() + b"]\n"
        try:
            os.write(self._wal, line)
        except OSError as e:
            # Not logged, not applied: the client is told, nothing is lost by a restart.
            raise errors.internal(f"{c.gr[1]} {key} was not stored: {self.wal_path}: "
                                  f"{e.strerror}") from None
        self._wal_bytes += len(line)
        if not self._compacting and \
                self._wal_bytes >= max(self.min_compact_bytes, self._snapshot_bytes):
            # After this write is applied (the snapshot must hold it) and between requests.
            try:
                asyncio.get_running_loop().call_soon(self.compact)
            except RuntimeError:
                return  # no loop (a test driving Storage directly): the next write retries
            self._compacting = True

    def compact(self) -> None:
        """Write the whole store as the snapshot and empty the log."""
        storage = self._storage
        if storage is None or self._wal < 0:
            return
        tmp = self.snapshot_path + ".tmp"
        size = 0
        # Private like the log: Secrets are in it.
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            size += f.write(orjson.dumps({"rv": storage.rv}) + b"\n")
            for (group, plural), c in storage.collections.items():
                for key, st in c.items.items():
                    head = orjson.dumps([group, plural, c.namespaced, key])
                    size += f.write(head[:-1] + b"," + st.raw() + b"]\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.snapshot_path)
        # Records the snapshot holds are skipped on load, so a stop here loses nothing.
        os.ftruncate(self._wal, 0)
        self._wal_bytes = 0
        self._snapshot_bytes = size
        self._compacting = False

    def close(self) -> None:
        """Compact, then stop logging and release the directory."""
        self.compact()
        if self._wal >= 0:
            os.close(self._wal)
            self._wal = -1
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def _saved(saved: dict[tuple[str, str], SavedCollection], group: str, plural: str,
           namespaced: bool) -> SavedCollection:
    s = saved.get((group, plural))
    if s is None:
        s = saved[(group, plural)] = SavedCollection(bool(namespaced))
    return s
