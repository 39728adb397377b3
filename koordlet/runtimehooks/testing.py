"""Helpers shared by the runtimehooks tests (a test module must not import another)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from api.extension.qos import LABEL_POD_QOS
from api.extension.resource import ANNOTATION_EXTENDED_RESOURCE_SPEC

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
