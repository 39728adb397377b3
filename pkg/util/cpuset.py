"""CPU lists as written in ``cpuset.cpus`` and node annotations (``"0-2,5"``).

Corresponds to upstream ``pkg/util/cpuset`` (``Parse``, ``String``), shared by the scheduler
(the reserved CPUs of ``node.koordinator.sh/reservation``) and koordlet
(``koordlet/util/system/cpuset.py`` re-exports it). Values are compared as sets: the kernel
rewrites ``0,1,2`` as ``0-2``.
"""

from __future__ import annotations


def parse_cpuset(text: str) -> frozenset[int]:
    """`"0-2,5"` → {0, 1, 2, 5}; empty or whitespace → empty. Raises ValueError when malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        first = int(lo)
        last = int(hi) if sep else first
        if first < 0 or last < first:
            raise ValueError(f"invalid cpu range {part!r} in cpuset {text!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def format_cpuset(cpus: frozenset[int] | set[int]) -> str:
    """The kernel's canonical form: sorted, consecutive runs as ranges (`0-2,5`)."""
    runs: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)
