"""What a hook sees and what it returns (upstream `pkg/koordlet/runtimehooks/protocol`).

One request view serves pods and containers, built from a CRI hook request (proxy mode) or from
the pod spec (reconciler mode); a host application (NodeSLO ``spec.hostApplications``) has its
own, smaller view (upstream `host_qos_context.go`). Hooks return a :class:`Resources` with only
the fields they set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum

from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.resource import ExtendedResourceSpec


class Stage(StrEnum):
    """Hook stage names, also the JSON values of hook config files (upstream `rmconfig`)."""

    PRE_RUN_POD_SANDBOX = "PreRunPodSandbox"
    POST_STOP_POD_SANDBOX = "PostStopPodSandbox"
    PRE_CREATE_CONTAINER = "PreCreateContainer"
    PRE_START_CONTAINER = "PreStartContainer"
    POST_START_CONTAINER = "PostStartContainer"
    PRE_UPDATE_CONTAINER_RESOURCES = "PreUpdateContainerResources"
    POST_STOP_CONTAINER = "PostStopContainer"


@dataclass(slots=True, frozen=True)
class ContainerExtendedResources:
    """One container's batch resources as integers (batch-cpu millicores, batch-memory bytes);
    a resource that is absent is missing from the map."""

    requests: Mapping[str, int] = field(default_factory=dict)
    limits: Mapping[str, int] | None = None  # None: the container has no limits at all


def quantity_int(key: str, quantity: str) -> int:
    # resource.Quantity.Value(): rounded up to an integer.
    try:
        return math.ceil(quantity_value(quantity))
    except (ValueError, ArithmeticError) as exc:
        raise MalformedValueError(key, f"{quantity!r}: {exc}") from None


def extended_resources_from_spec(
    key: str, spec: ExtendedResourceSpec
) -> dict[str, ContainerExtendedResources]:
    """Container name → its extended resources, from the extended-resource-spec annotation."""
    out: dict[str, ContainerExtendedResources] = {}
    for name, container in (spec.containers or {}).items():
        requests = {k: quantity_int(key, v) for k, v in (container.requests or {}).items()}
        limits = (
            None
            if container.limits is None
            else {k: quantity_int(key, v) for k, v in container.limits.items()}
        )
        out[name] = ContainerExtendedResources(requests, limits)
    return out


@dataclass(slots=True)
class HookRequest:
    """A pod (``container_name is None``) or one of its containers, as the hooks see it."""

    pod_name: str
    pod_namespace: str
    pod_uid: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    cgroup_parent: str  # the pod's cgroup dir, relative to the cgroup root
    extended_resources: Mapping[str, ContainerExtendedResources]
    container_name: str | None = None
    container_id: str = ""

    @property
    def is_pod(self) -> bool:
        return self.container_name is None


@dataclass(slots=True, frozen=True)
class HostAppRequest:
    """A host application as the hooks see it (upstream `HostAppRequest`)."""

    name: str
    qos: str  # the koordinator QoS class name ("LS", "BE", ...), "" when unset
    cgroup_parent: str  # the application's cgroup dir, relative to the cgroup root


@dataclass(slots=True)
class Resources:
    """The fields hooks set (upstream `protocol.Resources`); None means "leave as it is"."""

    cpu_shares: int | None = None
    cfs_quota: int | None = None
    memory_limit: int | None = None
    cpuset: str | None = None  # "" means "do not change" for cgroup writes
    cpu_bvt: int | None = None
    oom_score_adj: int | None = None

    def merge(self, later: Resources) -> None:
        """Fields set by a later hook overwrite this one's (hooks run in name order)."""
        for f in fields(self):
            value = getattr(later, f.name)
            if value is not None:
                setattr(self, f.name, value)
