"""Logging: klog text header, JSON lines, verbosity levels, --vmodule, flags."""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from pkg.log import log as klog


@pytest.fixture(autouse=True)
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield
    if klog._handler is not None:
        root.removeHandler(klog._handler)
        klog._handler = None
    root.setLevel(level)
    for h in handlers:
        if h not in root.handlers:
            root.addHandler(h)


def test_text_format_and_verbosity() -> None:
    out = io.StringIO()
    klog.setup(2, klog.TEXT, stream=out)
    lg = logging.getLogger("koordlet.test")
    lg.info("started %s", "koordlet")
    lg.log(klog.level(2), "detail")
    lg.log(klog.level(3), "too detailed")
    lg.warning("careful")
    klog.info_s(lg, "Pod synced", pod="ns/p", count=3)
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    assert re.match(r"^I\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ log_test\.py:\d+\] started koordlet$",
                    lines[0])
    assert lines[1].endswith("] detail") and lines[2].startswith("W")
    assert lines[3].endswith('] Pod synced pod="ns/p" count=3')


def test_json_format() -> None:
    out = io.StringIO()
    klog.setup(4, klog.JSON, stream=out)
    lg = logging.getLogger("scheduler.test")
    lg.log(klog.level(4), "scored", extra={"kv": {"node": "n1"}})
    klog.error_s(lg, ValueError("boom"), "Failed to bind", pod="ns/p")
    try:
        raise RuntimeError("kaput")
    except RuntimeError:
        lg.exception("reconcile failed")
    a, b, c = (json.loads(line) for line in out.getvalue().splitlines())
    assert a["msg"] == "scored" and a["v"] == 4 and a["node"] == "n1"
    assert a["caller"].startswith("log_test.py:") and isinstance(a["ts"], float)
    assert b == {**b, "msg": "Failed to bind", "err": "boom", "pod": "ns/p"} and "v" not in b
    assert c["err"] == "kaput"


def test_vmodule_raises_verbosity_per_logger() -> None:
    out = io.StringIO()
    klog.setup(0, klog.TEXT, stream=out, vmodule="reflector=5,pkg.events.*=3")
    logging.getLogger("pkg.client.informers.reflector").log(klog.level(5), "r5")
    logging.getLogger("pkg.events.recorder").log(klog.level(3), "e3")
    logging.getLogger("pkg.events.recorder").log(klog.level(4), "e4")
    logging.getLogger("other").log(klog.level(1), "o1")
    logging.getLogger("other").info("o0")
    msgs = [line.rsplit("] ", 1)[1] for line in out.getvalue().splitlines()]
    assert msgs == ["r5", "e3", "o0"]
    with pytest.raises(ValueError, match="vmodule"):
        klog.parse_vmodule("reflector")


def test_flags() -> None:
    p = argparse.ArgumentParser()
    klog.add_flags(p)
    a = p.parse_args(["--v=4", "--logtostderr=true", "--logging-format=json"])
    assert (a.v, a.logging_format, a.logtostderr) == (4, "json", True)
    assert p.parse_args(["-v", "2"]).v == 2
    assert p.parse_args(["--logtostderr"]).logtostderr is True
    with pytest.raises(SystemExit):
        p.parse_args(["--logging-format=xml"])
