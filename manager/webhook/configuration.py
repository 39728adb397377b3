"""The Mutating/ValidatingWebhookConfigurations: upstream's webhook table, kept current.

Corresponds to upstream ``config/webhook/manifests.yaml`` (from the ``+kubebuilder:webhook``
markers of each handler package's ``webhooks.go``) + ``patch_manifests.yaml`` and
``pkg/webhook/util/configuration`` (``Ensure``): the first time a configuration is seen, its
``webhooks`` list is saved as JSON in annotation ``template`` and later runs start from that
template; webhooks whose path has no enabled handler are dropped; each kept one gets the CA
bundle and the service (or a URL when WEBHOOK_HOST is set). A configuration that does not exist
yet is created from the built-in table (upstream expects the Helm chart to have created it).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection
from typing import Any

from pkg.client import ApiError, Client
from pkg.client.errors import retry_on_conflict
from pkg.client.resources import MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS

from .options import WebhookOptions

Obj = dict[str, Any]
TEMPLATE_ANNOTATION = "template"

MUTATE_POD = "/mutate-pod"
VALIDATE_POD = "/validate-pod"
VALIDATE_POD_BINDING = "/validate-pod-binding"
MUTATE_ELASTIC_QUOTA = "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"
VALIDATE_ELASTIC_QUOTA = "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota"
MUTATE_NODE_STATUS = "/mutate-node-status"
VALIDATE_NODE = "/validate-node"
VALIDATE_CONFIGMAP = "/validate-configmap"
MUTATE_RESERVATION = "/mutate-reservation"
VALIDATE_CLUSTER_COLOCATION_PROFILE = \
    "/validate-config-koordinator-sh-v1alpha1-clustercolocationprofile"
# Beyond upstream, like the profile hook: see manager/webhook/reservation/validating.py.
VALIDATE_RESERVATION = "/validate-scheduling-koordinator-sh-v1alpha1-reservation"

_NO_CONTROL_PLANE = {"matchExpressions": [{"key": "control-plane", "operator": "DoesNotExist"}]}


def _hook(name: str, path: str, group: str, version: str, resources: list[str],
          operations: list[str], failure: str, *, ns_selector: Obj | None = None,
          obj_selector: Obj | None = None, versions: tuple[str, ...] = ("v1", "v1beta1")
          ) -> Obj:
    hook: Obj = {
        "name": name,
        "admissionReviewVersions": list(versions),
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system",
                                     "path": path}},
        "failurePolicy": failure,
        "sideEffects": "None",
        "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": operations,
                   "resources": resources}],
    }
    if ns_selector is not None:
        hook["namespaceSelector"] = ns_selector
    if obj_selector is not None:
        hook["objectSelector"] = obj_selector
    return hook


MUTATING_WEBHOOKS: tuple[Obj, ...] = (
    _hook("mpod-create.koordinator.sh", MUTATE_POD, "", "v1", ["pods"], ["CREATE"], "Fail",
          ns_selector=_NO_CONTROL_PLANE),
    _hook("mpod-update.koordinator.sh", MUTATE_POD, "", "v1", ["pods"], ["UPDATE"], "Fail",
          ns_selector=_NO_CONTROL_PLANE,
          obj_selector={"matchExpressions": [{"key": "pod.koordinator.sh/mutating-update",
                                              "operator": "In", "values": ["true"]}]}),
    _hook("melasticquota.koordinator.sh", MUTATE_ELASTIC_QUOTA, "scheduling.sigs.k8s.io",
          "v1alpha1", ["elasticquotas"], ["CREATE"], "Fail"),
    _hook("mnode-status.koordinator.sh", MUTATE_NODE_STATUS, "", "v1", ["nodes/status"],
          ["CREATE", "UPDATE"], "Ignore"),
    _hook("mreservation-create.koordinator.sh", MUTATE_RESERVATION, "scheduling.koordinator.sh",
          "v1alpha1", ["reservations"], ["CREATE"], "Fail"),
)

VALIDATING_WEBHOOKS: tuple[Obj, ...] = (
    _hook("vpod.koordinator.sh", VALIDATE_POD, "", "v1", ["pods"], ["CREATE", "UPDATE"],
          "Fail", ns_selector=_NO_CONTROL_PLANE),
    _hook("vpodbinding.koordinator.sh", VALIDATE_POD_BINDING, "", "v1", ["pods/binding"],
          ["CREATE"], "Ignore"),
    _hook("velasticquota.koordinator.sh", VALIDATE_ELASTIC_QUOTA, "scheduling.sigs.k8s.io",
          "v1alpha1", ["elasticquotas"], ["CREATE", "UPDATE", "DELETE"], "Fail"),
    _hook("vnode.koordinator.sh", VALIDATE_NODE, "", "v1", ["nodes"], ["CREATE", "UPDATE"],
          "Ignore"),
    _hook("vconfigmap.koordinator.sh", VALIDATE_CONFIGMAP, "", "v1", ["configmaps"],
          ["CREATE", "UPDATE", "DELETE"], "Fail", versions=("v1beta1",),
          obj_selector={"matchExpressions": [{"key": "koordinator.sh/configmap-type",
                                              "operator": "In",
                                              "values": ["slo-controller-config"]}]}),
    _hook("vclustercolocationprofile.koordinator.sh", VALIDATE_CLUSTER_COLOCATION_PROFILE,
          "config.koordinator.sh", "v1alpha1", ["clustercolocationprofiles"],
          ["CREATE", "UPDATE"], "Fail"),
    _hook("vreservation.koordinator.sh", VALIDATE_RESERVATION, "scheduling.koordinator.sh",
          "v1alpha1", ["reservations"], ["CREATE", "UPDATE"], "Fail"),
)


def _path_of(hook: Obj) -> str:
    cc = hook.get("clientConfig") or {}
    if cc.get("service"):
        return str(cc["service"].get("path") or "")
    url = str(cc.get("url") or "")
    rest = url.split("://", 1)[-1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else ""


def render(template: list[Obj], options: WebhookOptions, ca_bundle: str,
           paths: Collection[str]) -> list[Obj]:
    """The webhooks of ``template`` that have an enabled handler, pointed at this server."""
    out: list[Obj] = []
    for hook in template:
        path = _path_of(hook)
        if path not in paths:
            continue
        hook = copy.deepcopy(hook)
        if options.host:
            cc: Obj = {"url": f"https://{options.host}:{options.port}{path}"}
        else:
            cc = {"service": {"namespace": options.namespace, "name": options.service_name,
                              "path": path, "port": 443}}
        cc["caBundle"] = ca_bundle
        hook["clientConfig"] = cc
        out.append(hook)
    return out


def _ensure_one(client: Client, resource: Any, name: str, builtin: tuple[Obj, ...],
                options: WebhookOptions, ca_bundle: str, paths: Collection[str]) -> None:
    try:
        current: Obj | None = client.get(resource, name)
    except ApiError as e:
        if e.status != 404:
            raise
        current = None
    if current is None:
        template = list(builtin)
        body = {"apiVersion": resource.api_version, "kind": resource.kind,
                "metadata": {"name": name,
                             "annotations": {TEMPLATE_ANNOTATION: json.dumps(template)}},
                "webhooks": render(template, options, ca_bundle, paths)}
        try:
            client.create(resource, body)
            return
        except ApiError as e:
            if e.status != 409:
                raise
            current = client.get(resource, name)
    md = current.setdefault("metadata", {})
    annotations = dict(md.get("annotations") or {})
    try:
        template = json.loads(annotations[TEMPLATE_ANNOTATION])
        if not isinstance(template, list):
            raise ValueError("not a list")
    except (KeyError, ValueError):
        # First sight of a configuration we did not create (Helm's): its webhooks are the
        # template from now on.
        template = current.get("webhooks") or list(builtin)
        annotations[TEMPLATE_ANNOTATION] = json.dumps(template)
    webhooks = render(template, options, ca_bundle, paths)
    if webhooks == current.get("webhooks") and annotations == (md.get("annotations") or {}):
        return
    md["annotations"] = annotations
    current["webhooks"] = webhooks
    client.update(resource, current)


def ensure_configurations(client: Client, options: WebhookOptions, ca_bundle: str,
                          paths: Collection[str]) -> None:
    """Create or rewrite both configurations for the enabled ``paths``; a write that meets
    another replica's (409 Conflict) starts again from a fresh read."""
    retry_on_conflict(lambda: _ensure_one(
        client, MUTATING_WEBHOOK_CONFIGURATIONS, options.mutating_name, MUTATING_WEBHOOKS,
        options, ca_bundle, paths))
    retry_on_conflict(lambda: _ensure_one(
        client, VALIDATING_WEBHOOK_CONFIGURATIONS, options.validating_name,
        VALIDATING_WEBHOOKS, options, ca_bundle, paths))


__all__ = ["MUTATING_WEBHOOKS", "TEMPLATE_ANNOTATION", "VALIDATING_WEBHOOKS",
           "ensure_configurations", "render"]
