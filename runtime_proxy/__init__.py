"""koord-runtime-proxy: the Python counterpart of upstream `cmd/koord-runtime-proxy`
and `pkg/runtimeproxy`.

The CRI proxy between kubelet and the container runtime that calls runtime hooks.
Not implemented yet: `main.py` only parses `--help`.
"""
