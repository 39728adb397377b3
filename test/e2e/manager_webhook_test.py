"""e2e: koord-manager's webhooks registered with the embedded API server, called over HTTPS.

The server runs in process (manager/webhook.WebhookServer) as the chart's koord-manager
ServiceAccount (RBAC on, the chart installed: ``conftest``), takes over the chart's webhook
configurations and is reached through a Service and Endpoints as in a cluster; upstream's
spark-jobs ClusterColocationProfile is applied unchanged and the stored pods are checked field by
field. With the alpha gates on, node status
updates get amplified allocatable, node label changes that conflict with the slo-controller-config
are refused, and new Reservations get the profiles' mutations. The ElasticQuota webhook has no
side effects: its tree follows the informer, so a server-side dry run, a forged review or a create
that a later webhook refuses leaves no phantom quota, and a deleted quota frees its name and room.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from manager.webhook import WebhookOptions, WebhookServer
from manager.webhook.certs import CA_CERT
from manager.webhook.configuration import VALIDATE_ELASTIC_QUOTA
from pkg.client import ApiError
from pkg.client.resources import (
    CONFIGMAPS,
    ELASTIC_QUOTAS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    NODES,
    PODS,
    RESERVATIONS,
    SECRETS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    for_object,
)
from pkg.client.rest import Client
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate
from pkg.util.testdata import upstream_data_dir
from test.e2e.cluster import (
    chart_objects,
    chart_webhooks,
    install_chart,
    route_service,
    wait_for,
)
from test.e2e.conftest import KubeconfigOf

NS = "koordinator-system"
# The chart labels its own namespace control-plane, which every webhook exempts.
QUOTA_NS = "default"
SPARK_LABEL = "sparkoperator.k8s.io/launched-by-spark-operator"


ALPHA_GATES = "NodeMutatingWebhook=true,NodeValidatingWebhook=true,ReservationMutatingWebhook=true"


# _serve registers the configurations rendered for its gates, and routes the Service here.
pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def cluster(client: Client, kubeconfig_of: KubeconfigOf,
            tmp_path: Path) -> Iterator[tuple[Client, WebhookServer]]:
    yield from _serve(client, kubeconfig_of, tmp_path, "")


@pytest.fixture
def alpha_cluster(client: Client, kubeconfig_of: KubeconfigOf,
                  tmp_path: Path) -> Iterator[tuple[Client, WebhookServer]]:
    """The node and reservation webhooks on (alpha gates, off by default as upstream)."""
    yield from _serve(client, kubeconfig_of, tmp_path, ALPHA_GATES)


def _serve(client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
           gates: str) -> Iterator[tuple[Client, WebhookServer]]:
    """The chart's webhook configurations for ``featureGates=gates`` and a webhook server with
    the same gates, running as the koord-manager ServiceAccount."""
    escaped = gates.replace(",", "\\,")  # --set splits on unescaped commas
    install_chart(client, [o for o in chart_objects(set_values=[f"featureGates={escaped}"])
                           if o["kind"].endswith("WebhookConfiguration")])
    gate = FeatureGate(DEFAULT_FEATURE_GATES)
    if gates:
        gate.set(gates)
    options = WebhookOptions(port=0, bind_address="127.0.0.1", cert_dir=str(tmp_path / "certs"),
                             namespace=NS)
    manager = Client.from_kubeconfig(kubeconfig_of("koord-manager"))
    server = WebhookServer(manager, options, gate)
    server.start()
    route_service(client, NS, options.service_name, server.port)
    # The chart's hooks carry a placeholder caBundle until the server patches its CA in; with
    # the chart's Ignore failure policies a request sent before then skips the webhook.
    wait_for(lambda: _configured(client), timeout=60,
             what="the chart's webhook configurations carry koord-manager's CA")
    yield client, server
    server.stop()
    manager.close()


def _configured(client: Client) -> bool:
    try:
        ca = client.get(SECRETS, "koordinator-webhook-certs", NS)["data"][CA_CERT]
    except (ApiError, KeyError):
        return False
    hooks = chart_webhooks(client)
    return hooks is not None and all(h["clientConfig"].get("caBundle") == ca for h in hooks)


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
    # The chart's hooks for the default gates: pods and quotas; node, configmap and
    # reservation webhooks are alpha (the chart, as upstream's, registers no pod-binding or
    # profile hook).
    assert paths == {
        "mpod-create.koordinator.sh": "/mutate-pod",
        "mpod-update.koordinator.sh": "/mutate-pod",
        "melasticquota.koordinator.sh": "/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
        "vpod.koordinator.sh": "/validate-pod",
        "velasticquota.koordinator.sh":
            "/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota",
    }
    for hook in mutating["webhooks"] + validating["webhooks"]:
        assert hook["clientConfig"]["caBundle"] == ca
        assert hook["clientConfig"]["service"]["name"] == "koordinator-webhook-service"
        assert hook["clientConfig"]["service"]["namespace"] == NS
    # Helm's webhooks are kept as the template later starts render from.
    template = json.loads(mutating["metadata"]["annotations"]["template"])
    assert {h["name"] for h in template} == {"mpod-create.koordinator.sh",
                                             "mpod-update.koordinator.sh",
                                             "melasticquota.koordinator.sh"}
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
    quota = {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
             "metadata": {"name": "team-a", "namespace": "default"},
             "spec": {"min": {"cpu": "8"}, "max": {"cpu": "4"}}}
    with pytest.raises(ApiError) as e:
        client.create(ELASTIC_QUOTAS, quota, "default")
    assert "resourceKey cpu of quota team-a min 8 > max 4" in e.value.message
    quota["spec"] = {"min": {"cpu": "2"}, "max": {"cpu": "4"}}
    stored = client.create(ELASTIC_QUOTAS, quota, "default")
    # the mutating webhook filled in the parent and the shared weight
    assert stored["metadata"]["labels"]["quota.scheduling.koordinator.sh/parent"] == \
        "koordinator-root-quota"
    assert json.loads(stored["metadata"]["annotations"][
        "quota.scheduling.koordinator.sh/shared-weight"]) == {"cpu": "4"}


RATIO = "node.koordinator.sh/resource-amplification-ratio"
RAW = "node.koordinator.sh/raw-allocatable"


def test_alpha_gates_register_node_and_reservation_webhooks(
        alpha_cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = alpha_cluster
    mutating = client.get(MUTATING_WEBHOOK_CONFIGURATIONS,
                          "koordinator-mutating-webhook-configuration")
    validating = client.get(VALIDATING_WEBHOOK_CONFIGURATIONS,
                            "koordinator-validating-webhook-configuration")
    paths = {h["name"]: h["clientConfig"]["service"]["path"] for h in
             mutating["webhooks"] + validating["webhooks"]}
    assert paths["mnode-status.koordinator.sh"] == "/mutate-node-status"
    assert paths["vnode.koordinator.sh"] == "/validate-node"
    assert paths["mreservation-create.koordinator.sh"] == "/mutate-reservation"
    assert "vconfigmap.koordinator.sh" not in paths  # its own gate stays off


def test_node_status_update_gets_amplified_allocatable(
        alpha_cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = alpha_cluster
    kubelet_view = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    client.create(NODES, {"metadata": {"name": "n1", "annotations": {
        RATIO: '{"cpu":2.00,"memory":1.50}'}}})
    node = client.get(NODES, "n1")
    node["status"] = {"capacity": dict(kubelet_view), "allocatable": dict(kubelet_view)}
    stored = client.update_status(NODES, node)
    # the first status update saves what the kubelet reported and amplifies it
    assert stored["status"]["allocatable"] == {"cpu": "8", "memory": "12Gi", "pods": "110"}
    assert json.loads(stored["metadata"]["annotations"][RAW]) == {"cpu": "4", "memory": "8Gi"}
    assert stored["status"]["capacity"] == kubelet_view  # capacity is not amplified
    # the kubelet's reserved resources change: its new allocatable is the new base
    stored["status"]["allocatable"] = {"cpu": "3", "memory": "8Gi", "pods": "110"}
    stored = client.update_status(NODES, stored)
    assert stored["status"]["allocatable"] == {"cpu": "6", "memory": "12Gi", "pods": "110"}
    assert json.loads(stored["metadata"]["annotations"][RAW]) == {"cpu": "3", "memory": "8Gi"}
    # amplification turned off (the ratio annotation removed): the saved raw values go
    # with the next status update
    del stored["metadata"]["annotations"][RATIO]
    stored = client.update(NODES, stored)
    stored["status"]["allocatable"] = dict(kubelet_view)
    stored = client.update_status(NODES, stored)
    assert stored["status"]["allocatable"] == kubelet_view
    assert RAW not in (stored["metadata"].get("annotations") or {})


def test_label_change_into_two_node_strategies_is_rejected(
        alpha_cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = alpha_cluster
    strategies = {"nodeStrategies": [
        {"name": "pool-a", "nodeSelector": {"matchLabels": {"pool": "a"}}},
        {"name": "gpu", "nodeSelector": {"matchLabels": {"gpu": "true"}}}]}
    config = client.get(CONFIGMAPS, "slo-controller-config", NS)  # the chart's
    config["data"]["resource-threshold-config"] = json.dumps(strategies)
    client.update(CONFIGMAPS, config, NS)
    client.create(NODES, {"metadata": {"name": "n1", "labels": {"pool": "a"}}})
    node = client.get(NODES, "n1")
    node["metadata"]["labels"]["gpu"] = "true"
    with pytest.raises(ApiError) as e:
        client.update(NODES, node)
    assert e.value.status == 400
    body = json.loads(e.value.message.split("denied the request: ", 1)[1])
    assert body["reason"] == "ExistNodeConfict"
    assert "resource-threshold-config" in body["message"] and "n1" in body["message"]
    assert client.get(NODES, "n1")["metadata"]["labels"] == {"pool": "a"}
    # a label change that keeps the node under one strategy goes through
    node = client.get(NODES, "n1")
    node["metadata"]["labels"]["zone"] = "z1"
    assert client.update(NODES, node)["metadata"]["labels"]["zone"] == "z1"
    # creating a conflicting node is only logged, as upstream
    client.create(NODES, {"metadata": {"name": "n2", "labels": {"pool": "a", "gpu": "true"}}})


def test_reservation_create_gets_profile_mutations(
        alpha_cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = alpha_cluster
    profile = {"apiVersion": "config.koordinator.sh/v1alpha1",
               "kind": "ClusterColocationProfile", "metadata": {"name": "batch-reservations"},
               "spec": {"selector": {"matchLabels": {"app": "spark"}}, "qosClass": "BE",
                        "priorityClassName": "koord-batch", "koordinatorPriority": 1000,
                        "schedulerName": "koord-scheduler"}}
    client.create(for_object(profile), profile)

    def reservation(name: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "scheduling.koordinator.sh/v1alpha1", "kind": "Reservation",
                "metadata": {"name": name, "labels": labels},
                "spec": {"owners": [{"object": {"name": "driver", "namespace": "default"}}],
                         "template": {"spec": {"containers": [{"name": "c", "resources": {
                             "requests": {"cpu": "1", "memory": "1Gi"}}}]}}}}

    stored = client.create(RESERVATIONS, reservation("r1", {"app": "spark"}))
    assert stored["metadata"]["labels"] == {"app": "spark", "koordinator.sh/qosClass": "BE",
                                            "koordinator.sh/priority": "1000"}
    spec = stored["spec"]["template"]["spec"]
    assert spec["schedulerName"] == "koord-scheduler"
    assert (spec["priorityClassName"], spec["priority"]) == ("koord-batch", 5000)
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    other = client.create(RESERVATIONS, reservation("r2", {"app": "web"}))
    assert other["metadata"]["labels"] == {"app": "web"}
    assert "schedulerName" not in other["spec"]["template"]["spec"]


def _quota(name: str, min_cpu: str, max_cpu: str = "20", *, parent: str = "",
           is_parent: bool = False, labels: dict[str, str] | None = None,
           namespace: str = QUOTA_NS) -> dict[str, Any]:
    all_labels = dict(labels or {})
    if parent:
        all_labels["quota.scheduling.koordinator.sh/parent"] = parent
    if is_parent:
        all_labels["quota.scheduling.koordinator.sh/is-parent"] = "true"
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": namespace, "labels": all_labels},
            "spec": {"min": {"cpu": min_cpu}, "max": {"cpu": max_cpu}}}


def _names(client: Client) -> set[str]:
    return {q["metadata"]["name"] for q in client.list(ELASTIC_QUOTAS, QUOTA_NS)["items"]}


def test_server_dry_run_leaves_no_phantom(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    dry = client.create(ELASTIC_QUOTAS, _quota("team-a", "2"), QUOTA_NS, dry_run=True)
    assert dry["metadata"]["name"] == "team-a"
    assert "team-a" not in _names(client)
    stored = client.create(ELASTIC_QUOTAS, _quota("team-a", "2"), QUOTA_NS)
    assert stored["metadata"]["uid"]
    # the real one is in the tree: the name is taken in every namespace (the tree is by name)
    with pytest.raises(ApiError) as e:
        client.create(ELASTIC_QUOTAS, _quota("team-a", "2", namespace="kube-system"),
                      "kube-system")
    assert "AddQuota quota already exist:team-a" in e.value.message


def _ca_file(server: WebhookServer) -> Path:
    return Path(server.options.cert_dir) / CA_CERT


def _post_review(server: WebhookServer, path: str, review: dict[str, Any]) -> dict[str, Any]:
    ctx = ssl.create_default_context(cafile=str(_ca_file(server)))
    ctx.check_hostname = False  # the certificate names the webhook Service, not 127.0.0.1
    req = urllib.request.Request(f"https://127.0.0.1:{server.port}{path}",
                                 data=json.dumps(review).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
        out: dict[str, Any] = json.loads(resp.read())["response"]
    return out


def test_forged_review_changes_nothing(cluster: tuple[Client, WebhookServer]) -> None:
    client, server = cluster
    forged = _quota("team-b", "2")
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
              "request": {"uid": str(uuid.uuid4()), "operation": "CREATE", "namespace": QUOTA_NS,
                          "name": "team-b",
                          "kind": {"group": "scheduling.sigs.k8s.io", "version": "v1alpha1",
                                   "kind": "ElasticQuota"},
                          "resource": {"group": "scheduling.sigs.k8s.io",
                                       "version": "v1alpha1", "resource": "elasticquotas"},
                          "object": forged}}
    assert _post_review(server, VALIDATE_ELASTIC_QUOTA, review)["allowed"] is True
    assert server.topology.get("team-b") is None
    # the real create is not refused by the forged one ("AddQuota quota already exist")
    client.create(ELASTIC_QUOTAS, _quota("team-b", "2"), QUOTA_NS)
    wait_for(lambda: server.topology.get("team-b") is not None, timeout=30,
             what="the informer to add team-b to the tree")


def test_delete_frees_name_and_room(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    client.create(ELASTIC_QUOTAS, _quota("parent", "10", is_parent=True), QUOTA_NS)
    # created right after its parent: the check waits for the informer instead of refusing
    client.create(ELASTIC_QUOTAS, _quota("child-a", "6", parent="parent"), QUOTA_NS)
    with pytest.raises(ApiError) as e:
        client.create(ELASTIC_QUOTAS, _quota("child-b", "5", parent="parent"), QUOTA_NS)
    assert "checkMinQuotaSum allChildren SumMinQuota > parentMinQuota, parent: parent" in \
        e.value.message
    client.delete(ELASTIC_QUOTAS, "child-a", QUOTA_NS)

    def create_child_b() -> bool:
        try:
            client.create(ELASTIC_QUOTAS, _quota("child-b", "5", parent="parent"), QUOTA_NS)
        except ApiError as err:
            assert "SumMinQuota" in err.message, err.message  # only the lag, nothing else
            return False
        return True

    wait_for(create_child_b, timeout=30, what="child-a's room to be freed")
    # and its name: child-a comes back under the parent (6 + 5 > 10 would refuse, so 5)
    client.create(ELASTIC_QUOTAS, _quota("child-a", "5", parent="parent"), QUOTA_NS)
    assert _names(client) == {"parent", "child-a", "child-b"}


def test_create_refused_by_a_later_webhook_leaves_no_trace(
        cluster: tuple[Client, WebhookServer]) -> None:
    client, server = cluster
    # A second validating webhook that refuses quotas labelled refuse=yes: its path has no
    # handler, so the call fails and failurePolicy Fail refuses the create after
    # koordinator's own webhook admitted it.
    client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "zz-refuse-labelled-quotas"},
        "webhooks": [{
            "name": "refuse.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "failurePolicy": "Fail",
            "clientConfig": {"url": f"https://127.0.0.1:{server.port}/refuse",
                             "caBundle": base64.b64encode(_ca_file(server).read_bytes()).decode()},
            "objectSelector": {"matchLabels": {"refuse": "yes"}},
            "rules": [{"apiGroups": ["scheduling.sigs.k8s.io"], "apiVersions": ["v1alpha1"],
                       "operations": ["CREATE"], "resources": ["elasticquotas"]}]}]})
    with pytest.raises(ApiError) as e:
        client.create(ELASTIC_QUOTAS, _quota("team-c", "2", labels={"refuse": "yes"}), QUOTA_NS)
    assert "refuse.example.com" in e.value.message
    assert server.topology.get("team-c") is None
    client.create(ELASTIC_QUOTAS, _quota("team-c", "2"), QUOTA_NS)
    assert "team-c" in _names(client)


def test_configuration_declares_no_side_effects(cluster: tuple[Client, WebhookServer]) -> None:
    client, _ = cluster
    cfg = client.get(VALIDATING_WEBHOOK_CONFIGURATIONS,
                     "koordinator-validating-webhook-configuration")
    hooks = {h["name"]: h for h in cfg["webhooks"]}
    assert hooks["velasticquota.koordinator.sh"]["sideEffects"] == "None"
