"""koord-scheduler: the Python counterpart of upstream `cmd/koord-scheduler`
and `pkg/scheduler`.

The kube-scheduler framework with Koordinator's plugins.
Not implemented yet: `main.py` only parses `--help`.
"""
