"""`py_pytest`: a py_test that runs one pytest file through the shared runner.

The test file stays a plain pytest module (`pytest path/to/foo_test.py` works from the repo
root); under Bazel, //hack/bazel:pytest_main.py is the entry point and runs pytest on it.
"""

load("@rules_python//python:defs.bzl", "py_test")

def py_pytest(name, srcs, deps = [], data = [], args = [], size = "small", **kwargs):
    """One py_test per `*_test.py` file.

    Args:
      name: target name (the file name without `.py`).
      srcs: the test file (one file, or helpers with the test file first).
      deps: libraries the test imports.
      data: runtime files (fixtures, `@upstream_data//:files`, ...).
      args: extra pytest arguments.
      size: Bazel test size; timeouts per size are set in .bazelrc.
      **kwargs: passed to py_test (tags, env, timeout, ...).
    """
    py_test(
        name = name,
        srcs = srcs + ["//hack/bazel:pytest_main.py"],
        main = "//hack/bazel:pytest_main.py",
        args = ["$(rootpath %s)" % srcs[0]] + args,
        deps = deps,
        data = data + ["//:pytest_config"],
        python_version = "PY3",
        srcs_version = "PY3",
        size = size,
        **kwargs
    )
