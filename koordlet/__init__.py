"""koordlet: the Python counterpart of upstream `cmd/koordlet` and `pkg/koordlet`.

The node agent (metrics, QoS management, runtime hooks).
Not implemented yet: `main.py` only parses `--help`.
"""
