"""Discovery documents: /version, /api, /apis, per-group-version resource lists.

Corresponds to upstream ``k8s.io/apiserver/pkg/endpoints/discovery`` (legacy discovery:
APIVersions, APIGroupList, APIGroup, APIResourceList) and ``.../discovery/aggregated``
(``apidiscovery.k8s.io/v2`` APIGroupDiscoveryList, used by kubectl 1.30+ to fetch everything
in two requests).
"""

from __future__ import annotations

import hashlib
from typing import Any

from .registry import Registry
from .resources import ResourceInfo

KUBE_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0",
    "gitCommit": "70d3cc986aa8221cd1dfb1121852688902d3bf53",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T17:59:15Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> str | None:
    """The aggregated-discovery media type to answer with, if the client asked for one."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=APIGroupDiscoveryList" in p and "g=apidiscovery.k8s.io" in p:
            if "v=v2beta1" in p:
                return AGGREGATED_V2BETA1
            if "v=v2" in p:
                return AGGREGATED_V2
    return None


def _hash(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:16]


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def api_group_list(reg: Registry) -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(g, vs) for g, vs in reg.groups()],
    }


def api_group(reg: Registry, group: str) -> dict[str, Any] | None:
    for g, vs in reg.groups():
        if g == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **_group(g, vs)}
    return None


def _resource_entries(info: ResourceInfo) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if info.categories:
        main["categories"] = list(info.categories)
    main["storageVersionHash"] = _hash(*info.storage, info.storage_version)
    out = [main]
    for sub in info.subresources.values():
        e: dict[str, Any] = {
            "name": f"{info.plural}/{sub.name}",
            "singularName": "",
            "namespaced": info.namespaced,
        }
        if sub.group is not None:
            e["group"] = sub.group
            e["version"] = sub.version
        e["kind"] = sub.kind
        e["verbs"] = list(sub.verbs)
        out.append(e)
    return out


def resource_list(reg: Registry, group: str, version: str) -> dict[str, Any]:
    gv = f"{group}/{version}" if group else version
    res: list[dict[str, Any]] = []
    for info in sorted(reg.resources(group, version), key=lambda i: i.plural):
        res.extend(_resource_entries(info))
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": res,
    }


def _aggregated_resource(info: ResourceInfo) -> dict[str, Any]:
    r: dict[str, Any] = {
        "resource": info.plural,
        "responseKind": {
            "group": info.group,
            "version": info.version,
            "kind": info.kind,
        },
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular,
        "verbs": list(info.verbs),
    }
    if info.short_names:
        r["shortNames"] = list(info.short_names)
    if info.categories:
        r["categories"] = list(info.categories)
    subs = []
    for sub in info.subresources.values():
        subs.append(
            {
                "subresource": sub.name,
                "responseKind": {
                    "group": sub.group if sub.group is not None else info.group,
                    "version": sub.version or info.version,
                    "kind": sub.kind,
                },
                "verbs": list(sub.verbs),
            }
        )
    if subs:
        r["subresources"] = subs
    return r


def _aggregated_versions(reg: Registry, group: str, versions: list[str]) -> list[dict[str, Any]]:
    out = []
    for v in versions:
        out.append(
            {
                "version": v,
                "resources": [
                    _aggregated_resource(i)
                    for i in sorted(reg.resources(group, v), key=lambda i: i.plural)
                ],
                "freshness": "Current",
            }
        )
    return out


def aggregated(reg: Registry, legacy: bool, media_type: str) -> dict[str, Any]:
    api_version = "apidiscovery.k8s.io/" + ("v2beta1" if "v2beta1" in media_type else "v2")
    if legacy:
        items = [
            {
                "metadata": {"creationTimestamp": None},
                "versions": _aggregated_versions(reg, "", ["v1"]),
            }
        ]
    else:
        items = [
            {
                "metadata": {"name": g, "creationTimestamp": None},
                "versions": _aggregated_versions(reg, g, vs),
            }
            for g, vs in reg.groups()
        ]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": api_version,
        "metadata": {},
        "items": items,
    }
