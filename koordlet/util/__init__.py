"""koordlet utilities: the Python counterpart of upstream `pkg/koordlet/util`."""
