"""koordlet's audit log on disk: upstream ``pkg/koordlet/audit`` (``types.go``,
``event_logger.go``, ``logger.go``).

An ``Event`` is one JSON line of ``<dir>/audit.log``. The writer drops events above its verbose
(0 keeps all), and once the file reaches ``MAX_FILE_SIZE`` it renames it to
``audit-<local time %Y-%m-%d-%H-%M-%S>-<n>.log`` and removes the oldest rotated files so that
at most ``max_disk_space_mb × 1 MiB / MAX_FILE_SIZE`` files stay, ``audit.log`` included.

Not as upstream: each event is flushed as it is written (upstream buffers up to 5 s), so
``/events`` shows it at once; a reader opens every file when it is created, so a rotation or a
removal while it pages neither repeats nor loses what it had, and it goes through the rotated
files newest first (upstream lists them oldest first after ``audit.log``).
"""

from __future__ import annotations

import glob
import logging
import os
import threading
import time
from collections.abc import Generator
from datetime import datetime
from typing import IO

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

log = logging.getLogger(__name__)

MAX_FILE_SIZE = 1 << 21  # 2 MiB
LOG_NAME = "audit.log"
ROTATED_PATTERN = "audit-*.log"

TYPE_NODE = "node"
TYPE_POD = "pod"
TYPE_GROUP = "group"
TYPE_UNKNOWN = "unknown"


class Event(BaseModel):
    """One audit event; empty fields are left out of its JSON, as Go's ``omitempty``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    created_at: datetime | None = None
    type: str = ""
    level: str = ""
    namespace: str = ""
    name: str = ""
    container: str = ""
    reason: str = ""
    message: str = ""

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_defaults=True)


class EventLogger:
    """Appends events to ``<dir>/audit.log`` and rotates it (upstream ``eventWriter``). The file
    is opened by the first event, so an auditor that records nothing creates nothing."""

    def __init__(self, log_dir: str, max_disk_space_mb: int, verbose: int,
                 max_file_size: int = MAX_FILE_SIZE) -> None:
        if max_disk_space_mb <= 0:
            raise ValueError(f"sizeMB [{max_disk_space_mb}] should be larger than 0")
        self.dir = log_dir
        self.verbose = verbose
        self.max_file_size = max_file_size
        self.max_file_num = max(max_disk_space_mb * (1 << 20) // max_file_size, 1)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None

    def log(self, verbose: int, event: Event) -> None:
        if self.verbose > 0 and verbose > self.verbose:
            return
        line = event.to_json() + "\n"
        with self._lock:
            if self._file is None:
                os.makedirs(self.dir, exist_ok=True)
                self._file = open(os.path.join(self.dir, LOG_NAME), "a", encoding="utf-8")
            self._file.write(line)
            self._file.flush()
            if self._file.tell() >= self.max_file_size:
                self._rotate()

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None
        stamp = time.strftime("%Y-%m-%d-%H-%M-%S", time.localtime())
        target = os.path.join(self.dir, f"audit-{stamp}-0.log")
        for i in range(1, 9):
            if not os.path.exists(target):
                break
            target = os.path.join(self.dir, f"audit-{stamp}-{i}.log")
        try:
            os.rename(os.path.join(self.dir, LOG_NAME), target)
        except OSError as e:
            log.error("failed to rename %s to %s: %s", LOG_NAME, target, e)
        # The next event opens a new audit.log, so keep one place for it.
        rotated = sorted(glob.glob(os.path.join(self.dir, ROTATED_PATTERN)))
        for old in rotated[:max(len(rotated) - self.max_file_num + 1, 0)]:
            log.info("clean audit file %s", old)
            try:
                os.remove(old)
            except OSError as e:
                log.error("clean audit file %s failed: %s", old, e)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class ReverseEventIterator:
    """The events of ``log_dir``, newest first, as they were when it was created."""

    def __init__(self, log_dir: str) -> None:
        rotated = sorted(glob.glob(os.path.join(log_dir, ROTATED_PATTERN)), reverse=True)
        self._files: list[tuple[IO[bytes], int]] = []
        for path in [os.path.join(log_dir, LOG_NAME), *rotated]:
            try:
                f = open(path, "rb")
            except OSError:
                continue  # no audit.log yet, or a rotated file removed meanwhile
            # What a later event appends to audit.log is not this reader's.
            self._files.append((f, os.fstat(f.fileno()).st_size))
        self._events = self._read()

    def _read(self) -> Generator[Event]:
        while self._files:
            f, size = self._files.pop(0)
            with f:
                lines = f.read(size).splitlines()
            for line in reversed(lines):
                if not line.strip():
                    continue
                try:
                    yield Event.model_validate_json(line)
                except ValidationError as e:
                    log.debug("skip a malformed audit line: %s", e)

    def next(self) -> Event | None:
        """The next older event, None at the end."""
        return next(self._events, None)

    def close(self) -> None:
        self._events.close()
        for f, _ in self._files:
            f.close()
        self._files.clear()
