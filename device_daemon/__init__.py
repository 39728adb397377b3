"""koord-device-daemon: the Python counterpart of upstream `cmd/koord-device-daemon`
and `pkg/device-daemon`.

Discovers GPUs and RDMA devices and publishes them.
Not implemented yet: `main.py` only parses `--help`.
"""
