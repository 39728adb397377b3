"""`local_python`: the Python toolchain is the machine's python3, with the pip packages.

Finds the interpreter at fetch time (`$KOORD_PYTHON`, else the first `python3` on PATH,
pyenv shims included), resolves it to the real executable and registers it as the Python 3
toolchain. Nothing machine-specific is written into the checkout; the path lives only in
Bazel's output base and is re-detected when PATH or KOORD_PYTHON changes.
"""

_BUILD = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

package(default_visibility = ["//visibility:public"])

# The resolved interpreter, for genrules: `$(execpath @local_python//:python3) -m ...`.
exports_files(["python3"])

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{interpreter}",
    python_version = "PY3",
    stub_shebang = "#!{interpreter}",
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

_PROBE = "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"

def _local_python_impl(rctx):
    python = rctx.os.environ.get("KOORD_PYTHON", "")
    if not python:
        found = rctx.which("python3")
        if not found:
            fail("local_python: no python3 on PATH; run hack/setup.sh or set KOORD_PYTHON")
        python = str(found)
    result = rctx.execute([python, "-c", _PROBE])
    if result.return_code != 0:
        fail("local_python: %s failed: %s" % (python, result.stderr))
    interpreter, version = result.stdout.strip().splitlines()
    major, minor = version.split(".")
    if int(major) != 3 or int(minor) < rctx.attr.min_minor:
        fail("local_python: %s is Python %s; need 3.%d+" % (interpreter, version, rctx.attr.min_minor))
    rctx.symlink(interpreter, "python3")
    rctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % rctx.name)
    rctx.file("BUILD.bazel", _BUILD.format(interpreter = interpreter))

local_python = repository_rule(
    implementation = _local_python_impl,
    attrs = {"min_minor": attr.int(default = 11)},
    environ = ["KOORD_PYTHON", "PATH", "PYENV_VERSION"],
    local = True,
)
