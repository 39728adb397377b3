"""Logging set-up with klog's flags and formats, on top of Python's ``logging``.

Corresponds to ``k8s.io/klog/v2`` (``-v``, ``--vmodule``, the ``I0102 15:04:05.000000 pid
file:line] msg`` header, ``InfoS`` key/value pairs) and component-base ``logs``
(``--logging-format=text|json``; the JSON lines have ``ts``, ``caller``, ``msg``, ``v`` and,
for errors, ``err``). Components call ``add_flags(parser)`` and ``setup_from_args(args)``.

Verbosity maps onto logging levels: klog's ``V(n)`` is level ``INFO - n`` (``level(n)``), so
``-v=4`` shows ``logger.log(level(4), ...)`` and everything more important; ``logger.debug``
is ``V(10)``. ``info_s(logger, msg, key=value, ...)`` logs a structured message.
``--logtostderr``, ``--alsologtostderr`` and ``--skip-headers`` are accepted for compatibility
with upstream manifests (logs always go to stderr unless ``--log-file`` is given).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import logging
import os
import sys
import time
from typing import IO, Any

from pkg.util import flags

TEXT = "text"
JSON = "json"
FORMATS = (TEXT, JSON)


def level(v: int) -> int:
    """The logging level of klog verbosity ``v`` (``V(0)`` is INFO)."""
    return max(1, logging.INFO - v)


def verbosity_of(levelno: int) -> int:
    return max(0, logging.INFO - levelno) if levelno <= logging.INFO else 0


def info_s(logger: logging.Logger, msg: str, v: int = 0, **kv: Any) -> None:
    """klog ``InfoS``: a message with key/value pairs, at verbosity ``v``."""
    lvl = level(v)
    if logger.isEnabledFor(lvl):
        logger.log(lvl, msg, extra={"kv": kv}, stacklevel=2)


def error_s(logger: logging.Logger, err: BaseException | str | None, msg: str,
            **kv: Any) -> None:
    """klog ``ErrorS``."""
    logger.error(msg, extra={"kv": kv, "err": err}, stacklevel=2)


def _caller(record: logging.LogRecord) -> str:
    return f"{os.path.basename(record.pathname)}:{record.lineno}"


def _kv_text(kv: dict[str, Any]) -> str:
    return "".join(f" {k}={json.dumps(v, default=str)}" for k, v in kv.items())


class KlogFormatter(logging.Formatter):
    """``I0102 15:04:05.000000   12345 file.py:123] message key="value"``."""

    _LETTERS = {logging.CRITICAL: "F", logging.ERROR: "E", logging.WARNING: "W"}

    def format(self, record: logging.LogRecord) -> str:
        letter = self._LETTERS.get(record.levelno, "I")
        if record.levelno > logging.ERROR:
            letter = "F"
        t = time.localtime(record.created)
        micros = int((record.created % 1) * 1e6)
        head = (f"{letter}{t.tm_mon:02d}{t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:"
                f"{t.tm_sec:02d}.{micros:06d} {record.process:7d} {_caller(record)}] ")
        msg = record.getMessage()
        kv = dict(getattr(record, "kv", None) or {})
        err = getattr(record, "err", None)
        if err is not None:
            kv = {"err": str(err), **kv}
        text = head + msg + _kv_text(kv)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class JSONFormatter(logging.Formatter):
    """component-base's JSON lines."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": round(record.created, 6), "caller": _caller(record),
                               "msg": record.getMessage()}
        if record.levelno >= logging.ERROR:
            err = getattr(record, "err", None)
            if err is None and record.exc_info and record.exc_info[1] is not None:
                err = record.exc_info[1]
            if err is not None:
                out["err"] = str(err)
        else:
            out["v"] = verbosity_of(record.levelno)
        if record.levelno == logging.WARNING:
            out["warning"] = True
        for k, v in (getattr(record, "kv", None) or {}).items():
            out.setdefault(k, v)
        if record.exc_info and record.levelno < logging.ERROR:
            out["stacktrace"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class VModuleFilter(logging.Filter):
    """``--vmodule=pattern=N,...``: per-logger verbosity (patterns match logger names, or
    their last component, with shell globs)."""

    def __init__(self, default_v: int, spec: str = "") -> None:
        super().__init__()
        self.default_v = default_v
        self.rules = parse_vmodule(spec)

    def verbosity_for(self, name: str) -> int:
        short = name.rsplit(".", 1)[-1]
        for pattern, v in self.rules:
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(short, pattern):
                return v
        return self.default_v

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= level(self.verbosity_for(record.name))


def parse_vmodule(spec: str) -> list[tuple[str, int]]:
    rules = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        pattern, sep, v = part.partition("=")
        if not sep or not pattern:
            raise ValueError(f"syntax error in --vmodule: expected pattern=N, got {part!r}")
        try:
            rules.append((pattern, int(v)))
        except ValueError:
            raise ValueError(f"syntax error in --vmodule: {v!r} is not a number") from None
    return rules


_handler: logging.Handler | None = None


def setup(verbosity: int = 0, fmt: str = TEXT, *, vmodule: str = "",
          stream: IO[str] | None = None, log_file: str | None = None) -> logging.Handler:
    """Configure the root logger (replacing an earlier ``setup``)."""
    global _handler
    if fmt not in FORMATS:
        raise ValueError(f"unsupported log format {fmt!r} (one of {', '.join(FORMATS)})")
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
        _handler.close()
    handler: logging.Handler
    if log_file:
        handler = logging.FileHandler(log_file)
    else:
        handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JSONFormatter() if fmt == JSON else KlogFormatter())
    vfilter = VModuleFilter(verbosity, vmodule)
    handler.addFilter(vfilter)
    most = max([verbosity] + [v for _, v in vfilter.rules])
    root.setLevel(level(most))
    root.addHandler(handler)
    _handler = handler
    return handler


def add_flags(parser: argparse.ArgumentParser | Any) -> None:
    """klog's and component-base's logging flags."""
    parser.add_argument("-v", "--v", dest="v", type=int, default=0, metavar="Level",
                        help="number for the log level verbosity")
    parser.add_argument("--vmodule", default="", metavar="pattern=N,...",
                        help="comma-separated list of pattern=N settings for file-filtered "
                             "logging")
    parser.add_argument("--logging-format", default=TEXT, choices=FORMATS,
                        help='Sets the log format. Permitted formats: "json", "text". '
                             '(default "text")')
    parser.add_argument("--log-file", default="",
                        help="If non-empty, use this log file")
    for flag, default in (("--logtostderr", True), ("--alsologtostderr", False),
                          ("--skip-headers", False)):
        flags.add_bool(parser, flag, default, "accepted for klog compatibility")


def setup_from_args(args: argparse.Namespace) -> logging.Handler:
    return setup(args.v, args.logging_format, vmodule=args.vmodule,
                 log_file=args.log_file or None)


__all__ = [
    "FORMATS", "JSON", "TEXT", "JSONFormatter", "KlogFormatter", "VModuleFilter", "add_flags",
    "error_s", "info_s", "level", "parse_vmodule", "setup", "setup_from_args", "verbosity_of",
]
