"""e2e: koord-manager's webhooks registered with the embedded API server, called over HTTPS.

The server runs in process (manager/webhook.WebhookServer), reached through a Service and
Endpoints as in a cluster; upstream's spark-jobs ClusterColocationProfile is applied
unchanged and the stored pods are checked field by field.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from manager.webhook import WebhookOptions, WebhookServer
from pkg.client import ApiError
from pkg.client.resources import (
    ENDPOINTS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NAMESPACES,
    PODS,
    PRIORITY_CLASSES,
    SECRETS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    Resource,
    for_object,
)
from pkg.client.rest import Client
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate
from pkg.util.testdata import upstream_data_dir
from test.apiserver import ServerHandle, start
from test.e2e.cluster import install_crds

NS = "koordinator-system"
SPARK_LABEL = "sparkoperator.k8s.io/launched-by-spark-operator"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Client, WebhookServer]]:
    srv: ServerHandle = start()
    client = Client.from_kubeconfig(srv.kubeconfig)
    install_crds(client)
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    client.create(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1",
                                     "kind": "PriorityClass", "metadata": {"name": "koord-batch"},
                                     "value": 5000, "preemptionPolicy": "PreemptLowerPriority"})
    options = WebhookOptions(port=0, bind_address="127.0.0.1", cert_dir=str(tmp_path / "certs"),
                             namespace=NS)
    server = WebhookServer(client, options, FeatureGate(DEFAULT_FEATURE_GATES))
    server.start()
    client.create(SERVICES, {"metadata": {"name": options.service_name, "namespace": NS},
                             "spec": {"ports": [{"port": 443, "targetPort": server.port}]}}, NS)
    client.create(ENDPOINTS, {"metadata": {"name": options.service_name, "namespace": NS},
                              "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                                           "ports": [{"port": server.port}]}]}, NS)
    yield client, server
    server.stop()
    client.close()
    srv.stop()


def _apply_profile(client: Client) -> None:
    path = upstream_data_dir() / "examples/spark-jobs/cluster-colocation-profile.yaml"
    for doc in yaml.safe_load_all(path.read_text()):
        client.create(for_object(doc), doc)


def _pod(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    res = {"cpu": "1", "memory": "1Gi"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark",
                                     "resources": {"requests": dict(res),
                                                   "limits": dict(res)}}]}}


def test_certificates_secret_and_configurations(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    secret = client.get(SECRETS, "koordinator-webhook-certs", NS)
    ca = secret["data"]["ca-cert.pem"]
    assert {"ca-key.pem", "cert.pem", "key.pem", "tls.crt", "tls.key"} <= set(secret["data"])
    mutating = client.get(MUTATING_WEBHOOK_CONFIGURATIONS,
                          "koordinator-mutating-webhook-configuration")
    validating = client.get(VALIDATING_WEBHOOK_CONFIGURATIONS,
                            "koordinator-validating-webhook-configuration")
    paths = {h["name"]: h["clientConfig"]["service"]["path"] for h in
             mutating["webhooks"] + validating["webhooks"]}
    # Default gates: pods and quotas; node, configmap and reservation webhooks are alpha.
    assert paths == {
        "mpod-create.koordinator.sh": "/mutate-pod",
        "mpod-update.koordinator.sh": "/mutate-pod",
        "melasticquota.koordinator.sh": "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
        "vpod.koordinator.sh": "/validate-pod",
        "vpodbinding.koordinator.sh": "/validate-pod-binding",
        "velasticquota.koordinator.sh":
            "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
    }
    for hook in mutating["webhooks"] + validating["webhooks"]:
        assert hook["clientConfig"]["caBundle"] == ca
        assert hook["clientConfig"]["service"]["name"] == "koordinator-webhook-service"
        assert hook["clientConfig"]["service"]["namespace"] == NS
    template = json.loads(mutating["metadata"]["annotations"]["template"])
    assert {h["name"] for h in template} >= {"mpod-create.koordinator.sh",
                                             "mreservation-create.koordinator.sh"}
    assert base64.b64decode(ca).startswith(b"-----BEGIN CERTIFICATE-----")


def test_spark_profile_mutates_matching_pod(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    _apply_profile(client)
    pod = client.create(PODS, _pod("spark-pi-driver", "spark-demo", {SPARK_LABEL: "true"}),
                        "spark-demo")
    md, spec = pod["metadata"], pod["spec"]
    # qosClass: BE → label
    assert md["labels"]["koordinator.sh/qosClass"] == "BE"
    # koordinatorPriority: 1000 → label, decimal
    assert md["labels"]["koordinator.sh/priority"] == "1000"
    # the pod's own label is kept
    assert md["labels"][SPARK_LABEL] == "true"
    # schedulerName: koord-scheduler
    assert spec["schedulerName"] == "koord-scheduler"
    # priorityClassName: koord-batch → name, value and preemption policy of the class
    assert spec["priorityClassName"] == "koord-batch"
    assert spec["priority"] == 5000
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    # batch pod: cpu/memory renamed, cpu as the integer milli value (1 core = 1000, which
    # Go's resource.Quantity writes in canonical form as "1k")
    res = spec["containers"][0]["resources"]
    assert res["requests"] == {"kubernetes.io/batch-cpu": "1k",
                               "kubernetes.io/batch-memory": "1Gi"}
    assert res["limits"] == {"kubernetes.io/batch-cpu": "1k",
                             "kubernetes.io/batch-memory": "1Gi"}
    # the extended resource spec annotation for the koordlet
    spec_annotation = json.loads(md["annotations"]["node.koordinator.sh/extended-resource-spec"])
    assert spec_annotation == {"containers": {"spark-kubernetes-driver": {
        "limits": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "1Gi"},
        "requests": {"kubernetes.io/batch-cpu": "1k", "kubernetes.io/batch-memory": "1Gi"}}}}


def test_non_matching_pods_are_unchanged(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    _apply_profile(client)
    # right namespace, wrong labels; right labels, namespace without enable-colocation
    for name, ns, labels in (("other", "spark-demo", {"app": "web"}),
                             ("elsewhere", "default", {SPARK_LABEL: "true"})):
        pod = client.create(PODS, _pod(name, ns, labels), ns)
        assert pod["metadata"]["labels"] == labels
        assert "annotations" not in pod["metadata"]
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert "priorityClassName" not in pod["spec"]
        assert pod["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}


def test_validating_webhooks_reject_through_the_api_server(
        cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    bad = _pod("bad", "default", {})
    bad["spec"]["containers"][0]["resources"] = {"requests": {"kubernetes.io/batch-cpu": "1000"}}
    with pytest.raises(ApiError) as e:
        client.create(PODS, bad, "default")
    assert e.value.status == 400
    assert "koordinator.sh/qosClass: Required value: must specify koordinator QoS BE" in \
        e.value.message
    quotas = Resource("scheduling.sigs.k8s.io", "v1alpha1", "elasticquotas", "ElasticQuota",
                      True)
    quota = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
             "metadata": {"name": "team-a", "namespace": "default"},
             "spec": {"min": {"cpu": "8"}, "max": {"cpu": "4"}}}
    with pytest.raises(ApiError) as e:
        client.create(quotas, quota, "default")
    assert "resourceKey cpu of quota team-a min 8 > max 4" in e.value.message
    quota["spec"] = {"min": {"cpu": "2"}, "max": {"cpu": "4"}}
    stored = client.create(quotas, quota, "default")
    # the mutating webhook filled in the parent and the shared weight
    assert stored["metadata"]["labels"]["quota.scheduling.koordinator.sh/parent"] == \
        "koordinator-root-quota"
    assert json.loads(stored["metadata"]["annotations"][
        "quota.scheduling.koordinator.sh/shared-weight"]) == {"cpu": "4"}
