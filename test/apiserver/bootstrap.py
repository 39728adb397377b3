"""Objects every cluster has, and the small controllers that keep them.

Corresponds to kube-apiserver's bootstrap (system namespaces, system priority classes) and the
parts of kube-controller-manager clients take for granted: a ``default`` ServiceAccount and the
``kube-root-ca.crt`` ConfigMap in every namespace.
"""

from __future__ import annotations

from typing import Any

from .api import SYSTEM_NAMESPACES, Api
from .meta import new_uid, now_rfc3339
from .resources import ResourceInfo
from .strategy import namespace_prepare_create
from .watch import Stored

SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}


def store_new(api: Api, info: ResourceInfo, obj: dict[str, Any]) -> Stored | None:
    """Store an object the server itself creates (no admission); None if it exists."""
    md = obj.setdefault("metadata", {})
    coll = api.collection(info)
    if coll.get(md.get("namespace") if info.namespaced else None, md["name"]) is not None:
        return None
    obj["apiVersion"] = info.api_version
    obj["kind"] = info.kind
    md["uid"] = new_uid()
    md["creationTimestamp"] = now_rfc3339()
    if info.generation:
        md["generation"] = 1
    st = api.storage.create(coll, obj)
    api._finish_write(info, "ADDED", st)
    return st


def install(api: Api, ca_pem: bytes | None = None) -> None:
    ns_info = api.info("", "v1", "namespaces")
    sa_info = api.info("", "v1", "serviceaccounts")
    cm_info = api.info("", "v1", "configmaps")

    def namespace_added(info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage != ("", "namespaces") or type_ != "ADDED":
            return
        ns = st.obj["metadata"]["name"]
        store_new(api, sa_info, {"metadata": {"name": "default", "namespace": ns}})
        if ca_pem is not None:
            store_new(api, cm_info, {"metadata": {"name": "kube-root-ca.crt", "namespace": ns},
                                     "data": {"ca.crt": ca_pem.decode()}})

    api.after_write.append(namespace_added)
    for name in SYSTEM_NAMESPACES:
        obj: dict[str, Any] = {"metadata": {"name": name}}
        namespace_prepare_create(obj)
        store_new(api, ns_info, obj)
    pc = api.info("scheduling.k8s.io", "v1", "priorityclasses")
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        store_new(api, pc, {"metadata": {"name": name}, "value": value,
                            "preemptionPolicy": "PreemptLowerPriority",
                            "description": "Used for system critical pods that must not be "
                                           "moved from their current node."})
