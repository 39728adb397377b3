"""MultiQuotaTree affinity: keep a pod of a quota tree on that tree's node pool.

Corresponds to upstream ``pkg/webhook/pod/mutating/multi_quota_tree_affinity.go``. With the
``MultiQuotaTree`` gate, each ElasticQuotaProfile owns a quota tree (label
``quota.scheduling.koordinator.sh/tree-id``) built from the nodes its ``nodeSelector`` picks;
a pod admitted into a quota of that tree gets the selector as a required node affinity, so it
can only land on nodes its tree's quota counted.

The pod's quota: label ``quota.scheduling.koordinator.sh/name``, else the quota named after
its namespace, else the quota whose namespaces annotation binds the namespace. Quotas come from
the webhook's shared quota topology (fed by the ElasticQuota informer), profiles from the
cached reader. The first profile of the tree in (namespace, name) order wins, as upstream
takes the first listed.
"""

from __future__ import annotations

from typing import Any

from api.extension.elastic_quota import LABEL_QUOTA_TREE_ID, get_quota_name
from pkg.client.resources import ELASTIC_QUOTA_PROFILES

from ..cached_reader import Obj, Reader
from ..elasticquota.topology import QuotaTopology


def quota_tree_of(topology: QuotaTopology, pod: Obj, namespace: str) -> str:
    """The tree ID of the pod's quota ('' when the quota is unknown or in no tree)."""
    info = topology.get(get_quota_name(pod) or namespace)
    if info is None:
        bound = topology.quota_for_namespace(namespace)
        info = topology.get(bound) if bound else None
    return info.tree_id if info is not None else ""


def tree_node_selector(reader: Reader, tree_id: str) -> dict[str, Any] | None:
    """``spec.nodeSelector`` of the first ElasticQuotaProfile labelled with ``tree_id``."""
    profiles = [p for p in reader.list_all(ELASTIC_QUOTA_PROFILES).get("items") or []
                if ((p.get("metadata") or {}).get("labels") or {}).get(LABEL_QUOTA_TREE_ID)
                == tree_id]
    if not profiles:
        return None
    profiles.sort(key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"]))
    selector = (profiles[0].get("spec") or {}).get("nodeSelector")
    return selector if isinstance(selector, dict) else None


def selector_requirements(selector: dict[str, Any]) -> list[dict[str, Any]]:
    """A label selector as node selector requirements: matchLabels become ``In [value]``."""
    reqs: list[dict[str, Any]] = [
        {"key": k, "operator": "In", "values": [v]}
        for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        req: dict[str, Any] = {"key": expr.get("key", ""), "operator": expr.get("operator", "")}
        if expr.get("values"):
            req["values"] = list(expr["values"])
        reqs.append(req)
    return reqs


def add_node_affinity_for_multi_quota_tree(topology: QuotaTopology, reader: Reader,
                                           pod: Obj) -> None:
    """Append the tree's node-pool requirements to every required node-affinity term."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    tree_id = quota_tree_of(topology, pod, namespace)
    if not tree_id:
        return
    selector = tree_node_selector(reader, tree_id)
    if selector is None:
        return
    reqs = selector_requirements(selector)
    spec = pod.setdefault("spec", {})
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    if terms:
        for term in terms:
            term["matchExpressions"] = list(term.get("matchExpressions") or []) + reqs
    else:
        terms = [{"matchExpressions": reqs}]
    required["nodeSelectorTerms"] = terms
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity
