"""Prints the closing line of hack/test.sh: test cases passed and failed in a `bazel test` run.

Reads Bazel's output (the summary lists every test target with its status) and, for each
target, the JUnit XML that pytest wrote (bazel-testlogs/<package>/<name>/test.xml). A target
that failed without XML (a crash, a timeout, a build error) counts as one failed test.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

STATUS = re.compile(
    r"^(//[^\s:]*:\S+|//\S+)\s+(?:\(cached\) )?"
    r"(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE|REMOTE FAILURE|FAILED TO BUILD)\b"
)


def _xml_path(target: str, testlogs: Path) -> Path:
    package, _, name = target[2:].partition(":")
    if not name:
        name = package.rsplit("/", 1)[-1]
    return testlogs / package / name / "test.xml"


def _counts(xml: Path) -> tuple[int, int, int] | None:
    """(passed, failed, skipped) test cases in a JUnit file, or None if unreadable."""
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    tests = failed = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return tests - failed - skipped, failed, skipped


def summarize(output: str, testlogs: Path = Path("bazel-testlogs")) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for line in output.splitlines():
        match = STATUS.match(line.strip())
        if not match:
            continue
        target, status = match.groups()
        counts = (
            _counts(_xml_path(target, testlogs))
            if status in ("PASSED", "FAILED", "FLAKY")
            else None
        )
        if counts is None:
            if status in ("PASSED", "FLAKY"):
                passed += 1
            else:
                failed += 1
            continue
        p, f, s = counts
        if status == "FAILED" and f == 0:
            f = 1  # the target failed outside pytest's view
        passed, failed, skipped = passed + p, failed + f, skipped + s
    return passed, failed, skipped


def main(argv: list[str]) -> int:
    output = Path(argv[1]).read_text(errors="replace") if len(argv) > 1 else sys.stdin.read()
    passed, failed, skipped = summarize(output)
    line = f"bazel: {passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
