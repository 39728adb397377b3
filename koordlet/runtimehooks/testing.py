"""Helpers shared by the runtimehooks tests (a test module must not import another)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from api.extension.qos import LABEL_POD_QOS
from api.extension.resource import ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec
from koordlet.runtimehooks.protocol import HookRequest, extended_resources_from_spec

GI = 1 << 30


def extended_spec_annotation(containers: Mapping[str, Mapping[str, Mapping[str, str]]]) -> dict:
    """{"<container>": {"requests": {...}, "limits": {...}}} as the webhook's annotation."""
    return {ANNOTATION_EXTENDED_RESOURCE_SPEC: json.dumps({"containers": containers})}


def batch(cpu: str | None = None, memory: str | None = None) -> dict[str, str]:
    out = {}
    if cpu is not None:
        out["kubernetes.io/batch-cpu"] = cpu
    if memory is not None:
        out["kubernetes.io/batch-memory"] = memory
    return out


BE_LABELS = {LABEL_POD_QOS: "BE"}


def hook_request(containers: Mapping[str, Mapping[str, Mapping[str, str]]],
                 labels: Mapping[str, str] = BE_LABELS, container: str | None = None,
                 cgroup_parent: str = "kubepods/besteffort/poduid-1") -> HookRequest:
    """The pod (or one container) the hooks see for these containers' batch resources."""
    annotations = extended_spec_annotation(containers)
    extended = extended_resources_from_spec(
        ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec(annotations))
    return HookRequest("p", "ns", "uid-1", labels, annotations, cgroup_parent, extended,
                       container_name=container)


_C0 = {"requests": batch("500", "2Gi"), "limits": batch("500", "2Gi")}

# BatchResource's pod-level values (upstream batch_resource_test.go's cases and more), checked
# as pure results in hooks/batchresource_test.py and as real cgroup writes in cgroupapply_test.py.
BATCH_POD_CASES = [
    # (containers, ratio, cfsQuota suppress, shares, quota, memory)
    ({"c0": _C0}, -1, False, 512, 50000, 2 * GI),
    ({"c0": _C0, "c1": {"limits": batch("1000", "2Gi")}}, -1, False, 512, 150000, 4 * GI),
    ({"c0": _C0, "c1": {"requests": batch("500", "2Gi")}}, -1, False, 1024, -1, -1),
    ({"c0": {"requests": batch("500", "2Gi")}}, -1, False, 512, -1, -1),
    ({"c0": _C0}, 1.2, False, 512, 41667, 2 * GI),
    ({"c0": _C0}, -1, True, 512, -1, 2 * GI),
    # "1k" batch-cpu is 1000 millicores, never ×1000.
    ({"c0": {"requests": batch("1k"), "limits": batch("2k", "1Gi")}}, -1, False, 1024, 200000,
     GI),
    # A tiny limit gets the kernel's 1000 µs floor; shares the floor of 2.
    ({"c0": {"requests": batch("1"), "limits": batch("5", "64Mi")}}, -1, False, 2, 1000,
     64 << 20),
    # Ratio ≤ 1 leaves the quota alone.
    ({"c0": _C0}, 0.8, False, 512, 50000, 2 * GI),
]
