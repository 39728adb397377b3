"""e2e: bad ClusterColocationProfiles and bad pod labels through the real kubectl, against the
embedded API server (RBAC on, the chart installed: ``conftest``) and a real koord-manager
process (``python -m manager.main``) under the chart's ``koord-manager`` ServiceAccount.

* ``kubectl apply`` of a profile with an unparsable selector, an unknown qosClass or an unknown
  PriorityClass fails with the manager's message naming the profile and the field.
* A profile stored with a bad selector before the manager started (no webhook to refuse it)
  does not turn a web pod into a BE/koord-batch pod, and the manager records one Warning event
  on the profile naming the field.
* ``kubectl run`` with ``koordinator.sh/qosClass: bogus`` and ``koordinator.sh/priority:
  notanumber`` is admitted with kubectl printing a warning per label; a pod the validating
  webhook refuses prints the refusal and the warnings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pkg.client.resources import (
    CLUSTER_COLOCATION_PROFILES,
    EVENTS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from pkg.client.rest import Client
from test.apiserver import ServerHandle
from test.apiserver.testing import Kubectl, kubectl_binary
from test.e2e.cluster import (
    PROFILE_HOOK,
    ComponentProcess,
    chart_objects,
    free_port,
    http_ok,
    install_chart,
    route_service,
    wait_for,
    with_profile_hook,
)
from test.e2e.conftest import KubeconfigOf, webhook_service

pytestmark = pytest.mark.skipif(kubectl_binary() is None, reason="kubectl is not installed")

NS = "koordinator-system"
SERVICE = "koordinator-webhook-service"
STORED_BAD = "spark-be"


def profile(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": "ClusterColocationProfile",
            "metadata": {"name": name}, "spec": spec}


# What made a web pod BE/koord-batch: "in" is not an operator.
BAD_SELECTOR = {"matchExpressions": [{"key": "app", "operator": "in", "values": ["spark"]}]}


VALIDATING = "ValidatingWebhookConfiguration"


@pytest.fixture
def client(srv: ServerHandle) -> Iterator[Client]:
    c = Client.from_kubeconfig(srv.kubeconfig)
    objects = chart_objects()
    install_chart(c, objects, skip=lambda o: webhook_service(o) or o["kind"] == VALIDATING)
    # Stored while no webhook guards profiles (before their hook is registered).
    c.create(CLUSTER_COLOCATION_PROFILES, profile(
        STORED_BAD, selector=BAD_SELECTOR, qosClass="BE", priorityClassName="koord-batch",
        schedulerName="koord-scheduler"))
    install_chart(c, [with_profile_hook(o) for o in objects if o["kind"] == VALIDATING])
    yield c
    c.close()


@pytest.fixture
def cluster(srv: ServerHandle, client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Client, Kubectl, ComponentProcess]]:
    port, probes = free_port(), free_port()
    route_service(client, NS, SERVICE, port)
    monkeypatch.setenv("WEBHOOK_PORT", str(port))
    monkeypatch.setenv("WEBHOOK_CERT_DIR", str(tmp_path / "certs"))
    manager = ComponentProcess("manager.main", [
        "--kubeconfig", kubeconfig_of("koord-manager"), "--metrics-addr",
        f"127.0.0.1:{free_port()}", "--health-probe-addr", f"127.0.0.1:{probes}",
        "--enable-leader-election=false"], tmp_path / "manager.log")
    kubectl = Kubectl(srv)
    try:
        wait_for(lambda: http_ok(f"http://127.0.0.1:{probes}/readyz"), timeout=60,
                 what=f"koord-manager ready; log:\n{manager.log()}")
        hooks = client.get(VALIDATING_WEBHOOK_CONFIGURATIONS,
                           "koordinator-validating-webhook-configuration")["webhooks"]
        assert PROFILE_HOOK in {h["name"] for h in hooks}
        yield client, kubectl, manager
    finally:
        manager.stop()
        kubectl.close()


def test_kubectl_apply_of_a_bad_profile_fails_naming_the_field(
        cluster: tuple[Client, Kubectl, ComponentProcess]) -> None:
    client, kubectl, manager = cluster
    cases = [
        (profile("bad-selector", selector=BAD_SELECTOR, qosClass="BE"),
         'ClusterColocationProfile "bad-selector" is invalid: spec.selector.matchExpressions[0]'
         '.operator: Unsupported value: "in": supported values: "In", "NotIn", "Exists", '
         '"DoesNotExist"'),
        (profile("bad-class", priorityClassName="koord-nope"),
         'ClusterColocationProfile "bad-class" is invalid: spec.priorityClassName: Not found: '
         '"koord-nope"'),
        (profile("bad-patch", patch={"spec": {"replicas": 2}}),
         'ClusterColocationProfile "bad-patch" is invalid: spec.patch.spec: Invalid value: '
         '"replicas": not a field of a pod\'s spec'),
    ]
    for obj, message in cases:
        p = kubectl.run("apply", "-f", "-", input=json.dumps(obj), check=False)
        assert p.returncode != 0, p.stdout
        assert f'admission webhook "{PROFILE_HOOK}" denied the request: {message}' in p.stderr
    names = {o["metadata"]["name"] for o in client.list(CLUSTER_COLOCATION_PROFILES)["items"]}
    assert names == {STORED_BAD}
    ok = profile("web-ls", selector={"matchLabels": {"tier": "web"}}, qosClass="LS")
    assert "created" in kubectl.run("apply", "-f", "-", input=json.dumps(ok)).stdout
    assert manager.alive()


def test_stored_bad_profile_matches_no_pod_and_raises_a_warning_event(
        cluster: tuple[Client, Kubectl, ComponentProcess]) -> None:
    client, kubectl, manager = cluster
    kubectl.run("run", "web", "--image=nginx", "--labels=app=web")
    pod = json.loads(kubectl.run("get", "pod", "web", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"app": "web"}  # no koordinator.sh/qosClass: BE
    assert pod["spec"]["schedulerName"] == "default-scheduler"
    assert "priorityClassName" not in pod["spec"]

    def warnings() -> list[dict[str, Any]]:
        return [e for e in client.list(EVENTS, "default")["items"]
                if e["involvedObject"].get("name") == STORED_BAD]

    (event,) = wait_for(warnings, timeout=30, what="a Warning event on the profile")
    kubectl.run("run", "web-2", "--image=nginx", "--labels=app=web")
    # One report per profile generation, not one per pod (a repeat would count 2).
    assert [e["count"] for e in warnings()] == [1]
    assert (event["type"], event["reason"]) == ("Warning", "InvalidSelector")
    assert event["involvedObject"]["kind"] == "ClusterColocationProfile"
    assert event["message"] == (
        f'ClusterColocationProfile "{STORED_BAD}" (generation 1) matches no pod: '
        'spec.selector.matchExpressions[0].operator: Unsupported value: "in": supported '
        'values: "In", "NotIn", "Exists", "DoesNotExist"')
    shown = kubectl.run("get", "events", "-n", "default",
                        f"--field-selector=involvedObject.name={STORED_BAD}").stdout
    assert "InvalidSelector" in shown
    assert manager.alive()


def test_kubectl_run_with_bogus_labels_prints_the_warnings(
        cluster: tuple[Client, Kubectl, ComponentProcess]) -> None:
    _, kubectl, manager = cluster
    qos_warning = ('Warning: metadata.labels[koordinator.sh/qosClass]: "bogus" is not a '
                   'Koordinator QoS class (supported values: "LSE", "LSR", "LS", "BE", '
                   '"SYSTEM"); the pod is treated as having none')
    priority_warning = ('Warning: metadata.labels[koordinator.sh/priority]: "notanumber" is not '
                        "a 32-bit integer; the label is ignored")
    p = kubectl.run("run", "odd", "--image=nginx",
                    "--labels=koordinator.sh/qosClass=bogus,koordinator.sh/priority=notanumber")
    assert "pod/odd created" in p.stdout
    assert qos_warning in p.stderr and priority_warning in p.stderr
    # Batch resources need BE, and a bogus QoS is none: refused, with the warning.
    overrides = {"apiVersion": "v1", "spec": {"containers": [{
        "name": "batch", "image": "nginx", "resources": {
            "requests": {"kubernetes.io/batch-cpu": "1k"},
            "limits": {"kubernetes.io/batch-cpu": "1k"}}}]}}
    p = kubectl.run("run", "batch", "--image=nginx", "--labels=koordinator.sh/qosClass=bogus",
                    f"--overrides={json.dumps(overrides)}", check=False)
    assert p.returncode != 0
    assert qos_warning in p.stderr
    assert 'admission webhook "vpod.koordinator.sh" denied the request: labels.koordinator.sh/' \
           "qosClass: Required value: must specify koordinator QoS BE with koordinator " \
           "colocation resources" in p.stderr
    assert manager.alive()
