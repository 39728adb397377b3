"""End-to-end suites, the Kubernetes API server for tests and the local cluster, and simulated
nodes: the counterpart of upstream's `test/` (e2e).

The name shadows the standard library's `test` package on purpose: the repository root comes
first on sys.path under pytest (pyproject.toml `pythonpath`) and Bazel (hack/bazel/pytest_main.py).
"""
