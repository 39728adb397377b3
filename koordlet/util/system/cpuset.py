"""CPU lists as written in `cpuset.cpus`: upstream `pkg/koordlet/util/cpuset` (Parse, String).

The parsing and formatting live in ``pkg/util/cpuset.py`` (the scheduler reads node-reserved
CPU lists too); koordlet's modules keep importing them from here.

The executor compares `cpuset.cpus` values as sets (the kernel rewrites `0,1,2` as `0-2`) and
merges them with a union when widening a parent before its children.
"""

from __future__ import annotations

from pkg.util.cpuset import format_cpuset, parse_cpuset

__all__ = ["format_cpuset", "parse_cpuset"]
