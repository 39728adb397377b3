"""What the local cluster installs before any workload, from upstream's own files (the Helm
chart's and kustomize's job upstream): Koordinator's CRDs, the ``koordinator-system``
namespace, the PriorityClasses ``koord-prod``/``koord-mid``/``koord-batch``/``koord-free``
(``config/manager/koord-*.yaml``, with kustomize's ``koord-`` name prefix), the
``slo-controller-config`` ConfigMap (``config/manager/slo-controller-config.yaml`` with the
scenario's keys merged in) and upstream's spark-jobs ClusterColocationProfile with its namespace.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from api.configuration import CONFIG_NAMESPACE, SLO_CTRL_CONFIG_MAP
from pkg.client import ApiError
from pkg.client.resources import CONFIGMAPS, NAMESPACES, PRIORITY_CLASSES, for_object
from pkg.client.rest import Client
from pkg.util.testdata import upstream_data_dir
from test.e2e.cluster import install_crds

from .scenario import Scenario

PRIORITY_CLASS_FILES = ("koord-prod.yaml", "koord-mid.yaml", "koord-batch.yaml",
                        "koord-free.yaml")
KUSTOMIZE_NAME_PREFIX = "koord-"
PROFILE_FILE = "examples/spark-jobs/cluster-colocation-profile.yaml"


def _create(client: Client, obj: dict[str, Any], namespace: str | None = None) -> None:
    try:
        client.create(for_object(obj), obj, namespace)
    except ApiError as e:
        if e.status != 409:  # AlreadyExists: a second run against the same server
            raise


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in override.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(
            out.get(k), dict) else v
    return out


def slo_controller_config(scenario: Scenario) -> dict[str, Any]:
    """Upstream's slo-controller-config ConfigMap in ``koordinator-system`` (kustomize's
    namespace), each key's JSON object with the scenario's object merged onto it."""
    cm = yaml.safe_load((upstream_data_dir() / "config/manager/slo-controller-config.yaml")
                        .read_text())
    data = {k: json.loads(v) for k, v in (cm.get("data") or {}).items()}
    for key, override in scenario.slo_controller_config.items():
        data[key] = deep_merge(data.get(key) or {}, override)
    cm["metadata"] = {"name": SLO_CTRL_CONFIG_MAP, "namespace": CONFIG_NAMESPACE}
    cm["data"] = {k: json.dumps(v, indent=2) for k, v in data.items()}
    return cm


def priority_classes() -> list[dict[str, Any]]:
    out = []
    for name in PRIORITY_CLASS_FILES:
        pc = yaml.safe_load((upstream_data_dir() / "config/manager" / name).read_text())
        pc["metadata"]["name"] = KUSTOMIZE_NAME_PREFIX + pc["metadata"]["name"]
        out.append(pc)
    return out


def install(client: Client, scenario: Scenario) -> None:
    install_crds(client)
    namespaces = {CONFIG_NAMESPACE} | {s.namespace for s in scenario.online}
    for ns in sorted(namespaces):
        _create(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for pc in priority_classes():
        _create(client, pc)
    _create(client, slo_controller_config(scenario), CONFIG_NAMESPACE)
    # The profile file holds its namespace (labelled koordinator.sh/enable-colocation) first.
    for doc in yaml.safe_load_all((upstream_data_dir() / PROFILE_FILE).read_text()):
        _create(client, doc, doc["metadata"].get("namespace"))
    for job in scenario.batch:  # a job in another namespace gets the profile's label too
        _create(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": job.namespace, "labels": {"koordinator.sh/enable-colocation": "true"}}})


__all__ = ["CONFIGMAPS", "NAMESPACES", "PRIORITY_CLASSES", "install", "slo_controller_config"]
