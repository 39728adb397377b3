"""api.all_kinds registers every kind, and every package defining kinds is listed in it."""

from __future__ import annotations

import importlib
from pathlib import Path

import api.all_kinds
from api.all_kinds import GROUP_PACKAGES
from api.meta import registered_kinds

API_DIR = Path(__file__).resolve().parent


def _packages_defining_kinds() -> set[str]:
    """Every ``api.<group>.v<N>`` package that defines at least one KubeObject kind."""
    versions = set()
    for init in API_DIR.rglob("v*/__init__.py"):
        parts = init.parent.relative_to(API_DIR.parent).parts
        if parts[-1][1:2].isdigit():
            versions.add(".".join(parts))
    for package in versions:
        importlib.import_module(package)
    modules = {kind.__module__ for kind in registered_kinds().values()}
    return {p for p in versions if any(m == p or m.startswith(p + ".") for m in modules)}


def test_every_package_defining_kinds_is_listed_and_imported() -> None:
    assert _packages_defining_kinds() <= set(GROUP_PACKAGES)
    source = Path(api.all_kinds.__file__).read_text()
    for package in GROUP_PACKAGES:
        assert f"import {package}\n" in source or f"import {package}  #" in source, package


def test_every_upstream_kind_is_registered() -> None:
    expected = {
        ("scheduling.koordinator.sh", "v1alpha1", "Reservation"),
        ("scheduling.koordinator.sh", "v1alpha1", "PodMigrationJob"),
        ("scheduling.koordinator.sh", "v1alpha1", "Device"),
        ("scheduling.koordinator.sh", "v1alpha1", "ClusterNetworkTopology"),
        ("scheduling.koordinator.sh", "v1alpha1", "ScheduleExplanation"),
        ("config.koordinator.sh", "v1alpha1", "ClusterColocationProfile"),
        ("quota.koordinator.sh", "v1alpha1", "ElasticQuotaProfile"),
        ("analysis.koordinator.sh", "v1alpha1", "Recommendation"),
        ("scheduling.sigs.k8s.io", "v1alpha1", "ElasticQuota"),
        ("scheduling.sigs.k8s.io", "v1alpha1", "PodGroup"),
        ("topology.node.k8s.io", "v1alpha1", "NodeResourceTopology"),
        ("topology.node.k8s.io", "v1alpha2", "NodeResourceTopology"),
    }
    assert expected <= registered_kinds().keys()
