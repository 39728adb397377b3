"""What the local cluster installs before any workload: charts/koordinator rendered by hack/helm
(what ``helm install`` creates upstream, less the Deployments and DaemonSets, whose components
run here as processes; the webhooks of pods and ElasticQuotas failing closed) with the
scenario's keys merged into its ``slo-controller-config`` ConfigMap and koord-manager's
ClusterColocationProfile validating webhook added to its validating configuration (upstream's
chart, and so ours, has none; registered as a user would, through the chart's Service), all by
``install`` before the components start; then, once koord-manager serves the webhooks that
validate it, what is the scenario's own (``install_scenario``): upstream's spark-jobs
ClusterColocationProfile (``examples/spark-jobs/cluster-colocation-profile.yaml``) with its
namespace, the namespaces of the scenario's pods, and its ElasticQuotas (parents first, through
koord-manager's quota webhooks; labelled as the scenario's so the recorder follows them).
The scenario's ``chartValues`` go to the renderer as a values file.

The chart brings Koordinator's CRDs, the ``koordinator-system`` namespace, the ServiceAccounts
the components run under with their ClusterRoles and bindings, the PriorityClasses
``koord-prod``/``koord-mid``/``koord-batch``/``koord-free``, the ConfigMaps
(``koord-scheduler-config`` is koord-scheduler's ``--config``, ``koord-descheduler-config``
koord-descheduler's, rendered with LowNodeLoad enabled) and the webhook Service, Secret and
configurations that koord-manager then points at itself.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from api.configuration import CONFIG_NAMESPACE, SLO_CTRL_CONFIG_MAP
from api.extension.elastic_quota import LABEL_QUOTA_IS_PARENT, LABEL_QUOTA_PARENT
from pkg.client import ApiError
from pkg.client.resources import for_object
from pkg.client.rest import Client
from pkg.util.testdata import upstream_data_dir
from test.e2e import cluster
from test.e2e.cluster import chart_objects

from .scenario import Quota, Scenario
from .workload import LABEL_GROUP, LABEL_KIND, QUOTA

Obj = dict[str, Any]
PROFILE_FILE = "examples/spark-jobs/cluster-colocation-profile.yaml"
SCHEDULER_CONFIG_MAP = "koord-scheduler-config"
DESCHEDULER_CONFIG_MAP = "koord-descheduler-config"
# The chart's values but these: the pod and ElasticQuota webhooks fail closed, as upstream's
# kustomize manifests (config/webhook) have them, rather than the chart's Ignore. While no
# koord-manager serves (a leader killed, its successor not yet pointing the configurations at
# itself) a batch pod is refused and created again by the driver, never admitted without its
# ClusterColocationProfile's mutation and left to a scheduler that does not exist. And
# koord-descheduler balances with LowNodeLoad (upstream ships it commented out).
CHART_VALUES = ("webhookConfiguration.failurePolicy.pods=Fail",
                "webhookConfiguration.failurePolicy.elasticquotas=Fail",
                "descheduler.enableLowNodeLoad=true")


def _create(client: Client, obj: Obj, namespace: str | None = None) -> None:
    try:
        client.create(for_object(obj), obj, namespace)
    except ApiError as e:
        if e.status != 409:  # AlreadyExists: a second run against the same server
            raise


def deep_merge(base: Obj, override: Obj) -> Obj:
    out = dict(base)
    for k, v in override.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(
            out.get(k), dict) else v
    return out


def _find(objects: list[Obj], kind: str, name: str) -> Obj:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def with_scenario_config(objects: list[Obj], scenario: Scenario) -> list[Obj]:
    """The chart's objects with the scenario's keys merged into ``slo-controller-config``:
    each key's JSON object with the scenario's object deep-merged onto it (a key the chart
    lacks is added)."""
    out = [dict(o) for o in objects]
    cm = _find(out, "ConfigMap", SLO_CTRL_CONFIG_MAP)
    data = {k: json.loads(v) for k, v in (cm.get("data") or {}).items()}
    for key, override in scenario.slo_controller_config.items():
        data[key] = deep_merge(data.get(key) or {}, override)
    cm["data"] = {k: json.dumps(v, indent=2) for k, v in data.items()}
    return out


def with_profile_hook(objects: list[Obj]) -> list[Obj]:
    """The chart's objects with koord-manager's ClusterColocationProfile hook in the validating
    configuration (``test.e2e.cluster.with_profile_hook``)."""
    return [cluster.with_profile_hook(o) if o["kind"] == "ValidatingWebhookConfiguration"
            else o for o in objects]


def scheduler_config_text(objects: list[Obj]) -> str:
    """koord-scheduler's KubeSchedulerConfiguration: the ``koord-scheduler-config`` key of the
    chart's ConfigMap of that name (what its Deployment mounts as ``--config``)."""
    return str(_find(objects, "ConfigMap", SCHEDULER_CONFIG_MAP)["data"][SCHEDULER_CONFIG_MAP])


def descheduler_config(objects: list[Obj]) -> Obj:
    """koord-descheduler's DeschedulerConfiguration: the ``koord-descheduler-config`` key of the
    chart's ConfigMap of that name, parsed."""
    text = _find(objects, "ConfigMap", DESCHEDULER_CONFIG_MAP)["data"][DESCHEDULER_CONFIG_MAP]
    config = yaml.safe_load(text)
    assert isinstance(config, dict), f"{DESCHEDULER_CONFIG_MAP}: not a mapping"
    return config


def render(scenario: Scenario) -> list[Obj]:
    """The chart with the scenario's ``chartValues`` and ``CHART_VALUES``, in install order,
    with the scenario's configuration."""
    with tempfile.TemporaryDirectory(prefix="local-up-values-") as tmp:
        values = Path(tmp) / "values.yaml"
        values.write_text(yaml.safe_dump(scenario.chart_values))
        objects = chart_objects(values_files=[values], set_values=CHART_VALUES)
    return with_profile_hook(with_scenario_config(objects, scenario))


def elastic_quota(quota: Quota) -> Obj:
    labels = {LABEL_KIND: QUOTA, LABEL_GROUP: quota.name}
    if quota.parent:
        labels[LABEL_QUOTA_PARENT] = quota.parent
    if quota.is_parent:
        labels[LABEL_QUOTA_IS_PARENT] = "true"
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": quota.name, "namespace": quota.in_namespace,
                         "labels": labels},
            "spec": {"min": quota.min.model_dump(), "max": quota.max.model_dump()}}


def install_scenario(client: Client, scenario: Scenario) -> None:
    """The scenario's profile and namespaces (online, batch and gang jobs'); the chart's
    webhooks must be served by now (a ClusterColocationProfile goes through one whose
    failurePolicy is Fail)."""
    # The profile file holds its namespace (labelled koordinator.sh/enable-colocation) first.
    for doc in yaml.safe_load_all((upstream_data_dir() / PROFILE_FILE).read_text()):
        _create(client, doc, doc["metadata"].get("namespace"))
    for ns in sorted(({s.namespace for s in scenario.online}
                      | {g.namespace for g in scenario.gangs}
                      | {q.in_namespace for q in scenario.quotas}) - {CONFIG_NAMESPACE}):
        _create(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for job in scenario.batch:  # a job in another namespace gets the profile's label too
        _create(client, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": job.namespace, "labels": {"koordinator.sh/enable-colocation": "true"}}})
    # The quota webhook checks a child against its parent: parents first.
    for quota in sorted(scenario.quotas, key=lambda q: not q.is_parent):
        _create(client, elastic_quota(quota), quota.in_namespace)


__all__ = ["CHART_VALUES", "PROFILE_FILE", "descheduler_config", "elastic_quota",
           "install_scenario", "render", "scheduler_config_text", "with_profile_hook",
           "with_scenario_config"]
