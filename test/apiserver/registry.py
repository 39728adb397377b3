"""The set of served resources, indexed for routing and discovery.

Corresponds to kube-apiserver's installed API groups plus the apiextensions-apiserver's
dynamic registration of custom resources: built-in resources are registered at start, CRDs
add and remove theirs while the server runs.
"""

from __future__ import annotations

from .resources import GROUP_ORDER, ResourceInfo, builtin_resources


class Registry:
    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceInfo] = {}
        # group -> ordered versions (preferred first)
        self._group_versions: dict[str, list[str]] = {}
        self.generation = 0  # bumped on every change, for discovery caching
        for info in builtin_resources():
            self.add(info)

    def add(self, info: ResourceInfo) -> None:
        self._by_gvr[(info.group, info.version, info.plural)] = info
        versions = self._group_versions.setdefault(info.group, [])
        if info.version not in versions:
            versions.append(info.version)
            versions.sort(key=version_priority, reverse=True)
        self.generation += 1

    def remove(self, group: str, version: str, plural: str) -> None:
        if self._by_gvr.pop((group, version, plural), None) is None:
            return
        if not any(g == group and v == version for g, v, _ in self._by_gvr):
            self._group_versions[group].remove(version)
            if not self._group_versions[group]:
                del self._group_versions[group]
        self.generation += 1

    def get(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_gvr.get((group, version, plural))

    def has_group_version(self, group: str, version: str) -> bool:
        return version in self._group_versions.get(group, ())

    def resources(self, group: str, version: str) -> list[ResourceInfo]:
        return [i for (g, v, _), i in self._by_gvr.items() if g == group and v == version]

    def groups(self) -> list[tuple[str, list[str]]]:
        """Named groups (not the legacy core group) with their versions, preferred first."""

        def order(g: str) -> tuple[int, str]:
            return (GROUP_ORDER.index(g) if g in GROUP_ORDER else len(GROUP_ORDER), g)

        return [
            (g, list(vs))
            for g, vs in sorted(self._group_versions.items(), key=lambda kv: order(kv[0]))
            if g
        ]

    def for_kind(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        for (g, v, _), i in self._by_gvr.items():
            if g == group and v == version and i.kind == kind:
                return i
        return None

    def all(self) -> list[ResourceInfo]:
        return list(self._by_gvr.values())


def version_priority(v: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then by numbers (v1 < v2)."""
    import re

    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (-1, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 0, "beta": 1, None: 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor)
