"""HostApplicationSpec: QoS management for processes that run on a node outside pods.

Corresponds to upstream `apis/slo/v1alpha1/host_application.go`. Listed in the
``host-application-config`` key of slo-controller-config and rendered into
``NodeSLO.spec.hostApplications``.
"""

from __future__ import annotations

from enum import StrEnum

from api.base import GoJSONModel


class CgroupBaseType(StrEnum):
    """Where ``CgroupPath.base`` is rooted."""

    ROOT = "CgroupRoot"  # the root of the cgroup fs, e.g. /sys/fs/cgroup/cpu/
    KUBEPODS = "Kubepods"  # e.g. /sys/fs/cgroup/cpu/kubepods/
    KUBEPODS_BURSTABLE = "KubepodsBurstable"
    KUBEPODS_BESTEFFORT = "KubepodsBesteffort"


class CgroupPath(GoJSONModel):
    """The cgroup of a host application: ``<base>/<parentDir>/<relativePath>``."""

    base: str | None = None
    parent_dir: str | None = None
    relative_path: str | None = None


class HostApplicationStrategy(GoJSONModel):
    """Reserved for per-application QoS settings; upstream defines no fields yet."""


class HostApplicationSpec(GoJSONModel):
    """HostApplicationSpec describes the QoS management for out-out-band applications on node."""

    name: str | None = None
    # A priority class name such as ``koord-prod``.
    priority: str | None = None
    # A QoS class name such as ``LS``.
    qos: str | None = None
    # Where the application's cgroup lives; derived from priority and QoS when unset.
    cgroup_path: CgroupPath | None = None
    strategy: HostApplicationStrategy | None = None


__all__ = ["CgroupBaseType", "CgroupPath", "HostApplicationSpec", "HostApplicationStrategy"]
