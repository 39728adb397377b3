"""Gang scheduling keys on pods: name, sizes, timeout, mode, groups and network topology.

Corresponds to upstream `apis/extension/coscheduling.go`, plus the
PodGroup label of scheduler-plugins. ``parse_*`` functions raise MalformedValueError for a bad
value; ``get_*`` functions apply the documented fallbacks instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Annotated

from pydantic import TypeAdapter

from api.errors import MalformedValueError
from api.extension.codec import decode_model, decode_value, parse_int_value
from api.extension.constants import (
    GANG_DOMAIN_PREFIX,
    INTERNAL_SCHEDULING_DOMAIN_PREFIX,
    SCHEDULING_DOMAIN_PREFIX,
)
from api.extension.objects import KubeDict, annotations_of, labels_of, metadata_of
from api.extension.payload import ALWAYS, GoInt64, GoPayload, dump_json
from api.meta import parse_duration

ANNOTATION_GANG_NAME = GANG_DOMAIN_PREFIX + "/name"
ANNOTATION_GANG_MIN_NUM = GANG_DOMAIN_PREFIX + "/min-available"
ANNOTATION_GANG_TOTAL_NUM = GANG_DOMAIN_PREFIX + "/total-number"
ANNOTATION_GANG_WAIT_TIME = GANG_DOMAIN_PREFIX + "/waiting-time"
ANNOTATION_GANG_MODE = GANG_DOMAIN_PREFIX + "/mode"
ANNOTATION_GANG_GROUPS = GANG_DOMAIN_PREFIX + "/groups"
ANNOTATION_GANG_TIMEOUT = GANG_DOMAIN_PREFIX + "/timeout"
ANNOTATION_GANG_MATCH_POLICY = GANG_DOMAIN_PREFIX + "/match-policy"
ANNOTATION_ALIAS_GANG_MATCH_POLICY = "pod-group.scheduling.sigs.k8s.io/match-policy"
ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX = GANG_DOMAIN_PREFIX + "/network-topology-index"
ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC = GANG_DOMAIN_PREFIX + "/network-topology-spec"
ANNOTATION_NETWORK_TOPOLOGY_SELECTOR = SCHEDULING_DOMAIN_PREFIX + "/network-topology-selector"

ANNOTATION_BIND_GANG_GROUP_ID = INTERNAL_SCHEDULING_DOMAIN_PREFIX + "/bind-gang-group-id"
ANNOTATION_BIND_GANG_MEMBER_COUNT = INTERNAL_SCHEDULING_DOMAIN_PREFIX + "/bind-gang-member-count"
DEPRECATED_ANNOTATION_BIND_GANG_GROUP_ID = SCHEDULING_DOMAIN_PREFIX + "/bind-gang-group-id"
DEPRECATED_ANNOTATION_BIND_GANG_MEMBER_COUNT = SCHEDULING_DOMAIN_PREFIX + "/bind-gang-member-count"

# scheduler-plugins PodGroup membership, checked first.
LABEL_POD_GROUP = "pod-group.scheduling.sigs.k8s.io"
# Deprecated lightweight-coscheduling labels.
LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME = "pod-group.scheduling.sigs.k8s.io/name"
LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE = (
    "pod-group.scheduling.sigs.k8s.io/min-available")


class GangMode(StrEnum):
    STRICT = "Strict"
    NON_STRICT = "NonStrict"


class GangMatchPolicy(StrEnum):
    ONLY_WAITING = "only-waiting"
    WAITING_AND_RUNNING = "waiting-and-running"
    ONCE_SATISFIED = "once-satisfied"


_MATCH_POLICIES = {policy.value: policy for policy in GangMatchPolicy}

DEFAULT_GANG_MODE = GangMode.STRICT
DEFAULT_GANG_MATCH_POLICY = GangMatchPolicy.ONCE_SATISFIED


class NetworkTopologyGatherStrategy(StrEnum):
    MUST_GATHER = "MustGather"
    PREFER_GATHER = "PreferGather"


def _annotation(annotations: Mapping[str, str] | None, key: str) -> str:
    return (annotations or {}).get(key, "")


# --- name and sizes --------------------------------------------------------------------------


def get_gang_name(pod: KubeDict | None) -> str:
    """Label ``pod-group.scheduling.sigs.k8s.io``, else the deprecated ``.../name`` label,
    else annotation ``gang.scheduling.koordinator.sh/name``; ``""`` when none is set."""
    labels = labels_of(pod)
    return (labels.get(LABEL_POD_GROUP) or labels.get(LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME)
            or annotations_of(pod).get(ANNOTATION_GANG_NAME) or "")


def get_gang_id(pod: KubeDict | None) -> str:
    """``namespace/gangName`` of the pod's gang; ``""`` when it belongs to none."""
    name = get_gang_name(pod)
    return f"{metadata_of(pod).get('namespace') or ''}/{name}" if name else ""


def parse_gang_min_num(annotations: Mapping[str, str] | None) -> int | None:
    """``min-available`` as a decimal int32; None when missing."""
    raw = (annotations or {}).get(ANNOTATION_GANG_MIN_NUM)
    if raw is None:
        return None
    return parse_int_value(ANNOTATION_GANG_MIN_NUM, raw, bits=32)


def get_gang_min_num(pod: KubeDict | None) -> int | None:
    """The gang minimum: the deprecated label wins over the annotation; None when neither."""
    raw = labels_of(pod).get(LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE)
    if raw is not None:
        return parse_int_value(LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE, raw, bits=32)
    return parse_gang_min_num(annotations_of(pod))


def parse_gang_total_num(annotations: Mapping[str, str] | None) -> int | None:
    """``total-number`` as a decimal int32; None when missing or empty."""
    raw = _annotation(annotations, ANNOTATION_GANG_TOTAL_NUM)
    return parse_int_value(ANNOTATION_GANG_TOTAL_NUM, raw, bits=32) if raw else None


def get_gang_total_num(annotations: Mapping[str, str] | None, min_num: int) -> int:
    """The gang's total size: empty, 0, invalid or less than ``min_num`` → ``min_num``."""
    try:
        total = parse_gang_total_num(annotations)
    except MalformedValueError:
        return min_num
    return min_num if total is None or total < min_num else total


def parse_gang_wait_time(annotations: Mapping[str, str] | None) -> float | None:
    """``waiting-time`` as seconds; None when missing or empty."""
    raw = _annotation(annotations, ANNOTATION_GANG_WAIT_TIME)
    if not raw:
        return None
    try:
        return parse_duration(raw)
    except ValueError as exc:
        raise MalformedValueError(ANNOTATION_GANG_WAIT_TIME, str(exc)) from None


def get_gang_wait_time(annotations: Mapping[str, str] | None, default: float) -> float:
    """The wait time in seconds: empty, zero, negative or invalid → ``default``."""
    try:
        wait = parse_gang_wait_time(annotations)
    except MalformedValueError:
        return default
    return wait if wait is not None and wait > 0 else default


def get_gang_mode(annotations: Mapping[str, str] | None) -> GangMode:
    """``Strict`` or ``NonStrict``; anything else is the default ``Strict``."""
    raw = _annotation(annotations, ANNOTATION_GANG_MODE)
    return GangMode.NON_STRICT if raw == GangMode.NON_STRICT else DEFAULT_GANG_MODE


def get_gang_match_policy(annotations: Mapping[str, str] | None,
                          default: GangMatchPolicy | str = DEFAULT_GANG_MATCH_POLICY
                          ) -> GangMatchPolicy | str:
    """The main key, else the alias key when the main one is empty; invalid → ``default``
    (the Coscheduling plugin's ``defaultMatchPolicy``)."""
    raw = _annotation(annotations, ANNOTATION_GANG_MATCH_POLICY) or _annotation(
        annotations, ANNOTATION_ALIAS_GANG_MATCH_POLICY)
    return _MATCH_POLICIES.get(raw, default)


# --- groups ----------------------------------------------------------------------------------

_GROUPS = TypeAdapter(list[str])


def parse_gang_groups(annotations: Mapping[str, str] | None) -> list[str] | None:
    """The ``namespace/gangName`` ids bound together; None when missing or empty."""
    raw = _annotation(annotations, ANNOTATION_GANG_GROUPS)
    if not raw:
        return None
    return decode_value(ANNOTATION_GANG_GROUPS, raw, _GROUPS)


def format_gang_groups(groups: Iterable[str]) -> str:
    return dump_json(_GROUPS, list(groups))


def gang_group_id(groups: Iterable[str] | None, gang_id: str) -> str:
    """The group's id: the sorted gang ids joined with ``,``; the gang itself by default."""
    members = sorted(groups or ())
    return ",".join(members) if members else gang_id


# --- network topology ------------------------------------------------------------------------


def parse_pod_network_topology_index(annotations: Mapping[str, str] | None) -> int:
    """The pod's rank in the gang; -1 when missing. Invalid raises MalformedValueError."""
    raw = (annotations or {}).get(ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX)
    if raw is None:
        return -1
    return parse_int_value(ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX, raw)


def get_pod_network_topology_index(annotations: Mapping[str, str] | None) -> int:
    """The pod's rank; -1 when missing or invalid."""
    try:
        return parse_pod_network_topology_index(annotations)
    except MalformedValueError:
        return -1


def sort_pods_by_index(pods: list[KubeDict]) -> list[KubeDict]:
    """Pods with a valid index first, ascending; ties and pods without one by name."""
    def key(pod: KubeDict) -> tuple[int, int, str]:
        index = get_pod_network_topology_index(annotations_of(pod))
        name = metadata_of(pod).get("name") or ""
        return (0, index, name) if index >= 0 else (1, 0, name)

    return sorted(pods, key=key)


class NetworkTopologyGatherRule(GoPayload):
    layer: Annotated[str, ALWAYS] = ""
    strategy: Annotated[str, ALWAYS] = ""
    pod_count_multiple: GoInt64 = 0


class NetworkTopologySpec(GoPayload):
    """The gang's network-topology requirement."""

    gather_strategy: list[NetworkTopologyGatherRule] | None = None


def parse_network_topology_spec(
        annotations: Mapping[str, str] | None) -> NetworkTopologySpec | None:
    """None when missing or empty."""
    raw = _annotation(annotations, ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC)
    if not raw:
        return None
    return decode_model(ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC, raw, NetworkTopologySpec)


def format_network_topology_spec(spec: NetworkTopologySpec) -> str:
    return spec.to_go_json()


__all__ = [
    "ANNOTATION_ALIAS_GANG_MATCH_POLICY", "ANNOTATION_BIND_GANG_GROUP_ID",
    "ANNOTATION_BIND_GANG_MEMBER_COUNT", "ANNOTATION_GANG_GROUPS", "ANNOTATION_GANG_MATCH_POLICY",
    "ANNOTATION_GANG_MIN_NUM", "ANNOTATION_GANG_MODE", "ANNOTATION_GANG_NAME",
    "ANNOTATION_GANG_NETWORK_TOPOLOGY_SPEC", "ANNOTATION_GANG_POD_NETWORK_TOPOLOGY_INDEX",
    "ANNOTATION_GANG_TIMEOUT", "ANNOTATION_GANG_TOTAL_NUM", "ANNOTATION_GANG_WAIT_TIME",
    "ANNOTATION_NETWORK_TOPOLOGY_SELECTOR", "DEFAULT_GANG_MATCH_POLICY", "DEFAULT_GANG_MODE",
    "DEPRECATED_ANNOTATION_BIND_GANG_GROUP_ID", "DEPRECATED_ANNOTATION_BIND_GANG_MEMBER_COUNT",
    "LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_MIN_AVAILABLE",
    "LABEL_LIGHTWEIGHT_COSCHEDULING_POD_GROUP_NAME", "LABEL_POD_GROUP", "GangMatchPolicy",
    "GangMode", "NetworkTopologyGatherRule", "NetworkTopologyGatherStrategy",
    "NetworkTopologySpec", "format_gang_groups", "format_network_topology_spec", "gang_group_id",
    "get_gang_id", "get_gang_match_policy", "get_gang_min_num", "get_gang_mode", "get_gang_name",
    "get_gang_total_num", "get_gang_wait_time", "get_pod_network_topology_index",
    "parse_gang_groups", "parse_gang_min_num", "parse_gang_total_num", "parse_gang_wait_time",
    "parse_network_topology_spec", "parse_pod_network_topology_index", "sort_pods_by_index",
]
