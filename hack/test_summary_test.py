"""hack/test_summary.py counts pytest's test cases across a `bazel test` run."""

from __future__ import annotations

from pathlib import Path

from hack import test_summary

OUTPUT = """\
INFO: Build completed, 1 test FAILED, 40 total actions
//api:loader_test                                                 PASSED in 0.8s
//pkg/util:testdata_test                                 (cached) PASSED in 0.6s
//api/crds:generate_test                                          FAILED in 0.8s
  /home/dev/.cache/bazel/.../testlogs/api/crds/generate_test/test.log
//test:slow_test                                                 TIMEOUT in 120.0s

Executed 3 out of 4 tests: 2 tests pass and 2 fail locally.
"""


def _xml(testlogs: Path, target: str, tests: int, failures: int, skipped: int = 0) -> None:
    package, name = target[2:].split(":")
    path = testlogs / package / name / "test.xml"
    path.parent.mkdir(parents=True)
    path.write_text(
        f'<testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" '
        f'errors="0" skipped="{skipped}"/></testsuites>'
    )


def test_counts_cases_from_junit_and_targets_without_it(tmp_path: Path) -> None:
    _xml(tmp_path, "//api:loader_test", tests=5, failures=0, skipped=1)
    _xml(tmp_path, "//pkg/util:testdata_test", tests=3, failures=0)
    _xml(tmp_path, "//api/crds:generate_test", tests=4, failures=2)
    # //test:slow_test timed out: one failure, whatever its XML says.
    assert test_summary.summarize(OUTPUT, tmp_path) == (4 + 3 + 2, 2 + 1, 1)


def test_closing_line(tmp_path: Path, capsys) -> None:
    log = tmp_path / "log"
    log.write_text("//a:b_test   PASSED in 0.1s\n")
    test_summary.main(["test_summary.py", str(log)])
    assert capsys.readouterr().out == "bazel: 1 passed, 0 failed\n"
