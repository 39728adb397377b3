"""hack/update_build.py: the checked-in BUILD files are current, and the generator's rules.

`test_build_files_are_current` reads the real checkout (under Bazel too: tagged external and
local, never cached), so a new file or import without regenerated BUILD files fails
`bazel test //...`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hack import update_build

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_build_files_are_current() -> None:
    problems = update_build.stale(REPO_ROOT)
    assert not problems, (
        "BUILD files are out of date; run `python3 hack/update_build.py`:\n" + "\n".join(problems)
    )


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _build(root: Path, rel: str) -> str:
    return (root / rel / "BUILD.bazel").read_text()


def test_library_and_tests_with_import_deps(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/core.py": "from lib.util import helper\nimport yaml\n",
            "app/core_test.py": "from app import core\nfrom pkg.util.testdata import x\n",
            "app/testdata/sample.yaml": "a: 1\n",
            "lib/__init__.py": "",
            "lib/util/__init__.py": "from . import helper\n",
            "lib/util/helper.py": "from ..other import thing\n",
            "lib/other.py": "",
            "pkg/__init__.py": "",
            "pkg/util/__init__.py": "",
            "pkg/util/testdata.py": "",
        },
    )
    assert update_build.write(root)
    app = _build(root, "app")
    assert app.startswith(update_build.HEADER)
    assert 'name = "app"' in app
    assert '"core.py"' in app and '"__init__.py"' in app
    assert 'deps = ["//lib/util"]' in app  # yaml is third-party: no dep
    assert "glob(" in app  # testdata/sample.yaml
    assert 'name = "core_test"' in app
    assert '"@upstream_data//:files"' in app
    assert '":app"' in app and '"//pkg/util"' in app
    util = _build(root, "lib/util")
    assert '"//lib"' in util  # relative import of lib.other, and the parent package
    assert "glob(" not in util
    assert update_build.stale(root) == []


def test_keep_block_and_directives_survive(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/main.py": "",
            "svc/main_test.py": "",
        },
    )
    update_build.write(root)
    build = root / "svc" / "BUILD.bazel"
    keep = (
        "# keep: begin\n"
        "# update_build: lib_dep //extra:lib\n"
        "# update_build: lib_data //tool:bin\n"
        '# update_build: test_kwargs main_test size = "medium"\n'
        'py_binary(\n    name = "svc-bin",\n    srcs = ["main.py"],\n    main = "main.py",\n)\n'
        "# keep: end\n"
    )
    build.write_text(build.read_text() + "\n" + keep)
    assert update_build.stale(root)  # the keep block moves to its place after the loads
    update_build.write(root)
    text = build.read_text()
    assert keep in text
    assert text.index(keep) < text.index("py_library(")
    assert '"//extra:lib"' in text
    assert '    data = ["//tool:bin"],\n' in text  # the library carries the binary
    assert 'size = "medium"' in text
    update_build.write(root)
    assert build.read_text() == text


def test_aggregator_cycle_is_broken_and_tests_complete_their_deps(tmp_path: Path) -> None:
    # top/all.py imports the sub-package, which imports top's base module: a cycle between
    # //top and //top/sub that Bazel cannot express.
    root = _tree(
        tmp_path,
        {
            "top/__init__.py": "",
            "top/base.py": "",
            "top/all.py": "import top.sub\n",
            "top/all_test.py": "import top.all\n",
            "top/sub/__init__.py": "from top.base import x\n",
            "top/sub/thing_test.py": "from top.sub import thing\n",
        },
    )
    update_build.write(root)
    top = _build(root, "top")
    sub = _build(root, "top/sub")
    assert "//top/sub" not in top[: top.index("py_pytest(")]  # the library leaves it out
    assert '"//top/sub"' in top[top.index("py_pytest(") :]  # all_test names it
    assert 'deps = ["//top"]' in sub[: sub.index("py_pytest(")]


def test_sibling_cycle_is_broken(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "a/__init__.py": "import b\n",
            "a/a_test.py": "import a\n",
            "b/__init__.py": "import a\n",
            "b/b_test.py": "import b\n",
        },
    )
    update_build.write(root)
    a, b = _build(root, "a"), _build(root, "b")
    assert ('"//b"' in a[: a.index("py_pytest(")]) != ('"//a"' in b[: b.index("py_pytest(")])
    assert '"//b"' in a[a.index("py_pytest(") :] or '"//b"' in a[: a.index("py_pytest(")]
    assert '"//a"' in b[b.index("py_pytest(") :] or '"//a"' in b[: b.index("py_pytest(")]


def test_binary_directive(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/main.py": "import lib\n",
            "svc/BUILD.bazel": update_build.HEADER
            + "# keep: begin\n# update_build: binary svc-bin main.py\n# keep: end\n",
            "lib/__init__.py": "",
        },
    )
    update_build.write(root)
    svc = _build(root, "svc")
    binary = svc[svc.index("py_binary(\n") :]
    assert 'name = "svc-bin"' in binary and 'main = "main.py"' in binary
    assert '":svc"' in binary


def test_tree_deps_directive(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "top/__init__.py": "",
            "top/walk_test.py": "import importlib\n",
            "top/BUILD.bazel": update_build.HEADER
            + "# keep: begin\n# update_build: tree_deps walk_test\n# keep: end\n",
            "top/a/__init__.py": "",
            "top/a/deep/__init__.py": "",
            "other/__init__.py": "",
        },
    )
    update_build.write(root)
    test = _build(root, "top").split("py_pytest(", 1)[1]
    assert '"//top/a"' in test and '"//top/a/deep"' in test
    assert "//other" not in test


def test_library_yields_its_name_to_a_binary(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/BUILD.bazel": update_build.HEADER
            + "# keep: begin\n# update_build: binary svc __init__.py\n# keep: end\n",
            "user/__init__.py": "import svc\n",
        },
    )
    update_build.write(root)
    assert 'name = "svc_lib"' in _build(root, "svc")
    assert '"//svc:svc_lib"' in _build(root, "user")


def test_namespace_package_gets_a_library(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"tools/script.py": "import lib.x\n", "lib/x.py": ""})
    update_build.write(root)
    assert 'srcs = ["script.py"]' in _build(root, "tools")
    assert 'deps = ["//lib"]' in _build(root, "tools")


def test_hand_written_build_is_left_alone(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"tools/script.py": "", "tools/BUILD.bazel": "# mine\n"})
    assert update_build.write(root) == []
    assert _build(root, "tools") == "# mine\n"


def test_removed_package_loses_its_generated_build(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"gone/__init__.py": "", "gone/data.yaml": ""})
    update_build.write(root)
    (root / "gone" / "__init__.py").unlink()
    assert update_build.stale(root)
    update_build.write(root)
    assert not (root / "gone" / "BUILD.bazel").exists()


def test_malformed_keep_block_is_an_error(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "svc/__init__.py": "",
            "svc/BUILD.bazel": update_build.HEADER
            + "# keep: begin\n# update_build: frobnicate x\n",
        },
    )
    with pytest.raises(update_build.GeneratorError, match="keep"):
        update_build.write(root)
