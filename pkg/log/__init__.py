"""Logging flags and formats (klog / component-base ``logs``)."""

from pkg.log.log import (
    JSON,
    TEXT,
    add_flags,
    error_s,
    info_s,
    level,
    setup,
    setup_from_args,
)

__all__ = ["JSON", "TEXT", "add_flags", "error_s", "info_s", "level", "setup",
           "setup_from_args"]
