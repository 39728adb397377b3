"""e2e: the Reservation validating webhook (beyond upstream) called over HTTPS by the embedded
API server: koord-manager's WebhookServer in process as the chart's koord-manager
ServiceAccount, with the Reservation webhooks' gate on, its hook added to the chart's
ValidatingWebhookConfiguration as a user would register it, reached through a Service and
Endpoints. Reservations the CRD schema lets through but the scheduler could not use (an empty
owner part, a bad owner selector, a negative request, a malformed reservation-affinity) are
refused naming the Reservation and the field; upstream's sample is created, and the
scheduler's status write to it passes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from api.extension.reservation import ANNOTATION_RESERVATION_AFFINITY
from manager.webhook import WebhookOptions, WebhookServer
from manager.webhook.certs import CA_CERT
from pkg.client import ApiError
from pkg.client.resources import RESERVATIONS, SECRETS
from pkg.client.rest import Client
from pkg.features import DEFAULT_FEATURE_GATES, FeatureGate
from pkg.util.testdata import upstream_data_dir
from scheduler.plugins.reservation.controller.testing import available
from test.e2e.cluster import (
    chart_objects,
    chart_webhooks,
    install_chart,
    route_service,
    wait_for,
    with_profile_hook,
)
from test.e2e.conftest import KubeconfigOf

NS = "koordinator-system"
HOOK = "vreservation.koordinator.sh"
GATES = "ReservationMutatingWebhook=true"


# The webhook configurations are installed below, with the gate and the hook.
pytestmark = pytest.mark.without_webhooks


@pytest.fixture
def webhooks(client: Client, kubeconfig_of: KubeconfigOf, tmp_path: Path) -> Iterator[Client]:
    configs = [o for o in chart_objects(set_values=[f"featureGates={GATES}"])
               if o["kind"].endswith("WebhookConfiguration")]
    install_chart(client, [with_profile_hook(o, HOOK)
                           if o["kind"] == "ValidatingWebhookConfiguration" else o
                           for o in configs])
    gate = FeatureGate(DEFAULT_FEATURE_GATES)
    gate.set(GATES)
    options = WebhookOptions(port=0, bind_address="127.0.0.1", cert_dir=str(tmp_path / "certs"),
                             namespace=NS)
    manager = Client.from_kubeconfig(kubeconfig_of("koord-manager"))
    server = WebhookServer(manager, options, gate)
    server.start()
    route_service(client, NS, options.service_name, server.port)

    def configured() -> bool:
        try:
            ca = client.get(SECRETS, "koordinator-webhook-certs", NS)["data"][CA_CERT]
        except (ApiError, KeyError):
            return False
        hooks = chart_webhooks(client)
        return hooks is not None and all(h["clientConfig"].get("caBundle") == ca
                                         for h in hooks) and HOOK in {h["name"] for h in hooks}
    wait_for(configured, timeout=60, what="the webhook configurations carry koord-manager's CA")
    yield client
    server.stop()
    manager.close()


def _sample() -> dict[str, Any]:
    path = upstream_data_dir() / "config/samples/scheduling_v1alpha1_reservation.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def _variant(name: str, **spec: Any) -> dict[str, Any]:
    obj = copy.deepcopy(_sample())
    obj["metadata"]["name"] = name
    obj["spec"].update(spec)
    return obj


def test_bad_reservations_are_refused_naming_the_field(webhooks: Client) -> None:
    client = webhooks
    negative = copy.deepcopy(_sample()["spec"]["template"])
    negative["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "-200m"
    affinity = copy.deepcopy(_sample()["spec"]["template"])
    affinity["metadata"] = {"annotations": {ANNOTATION_RESERVATION_AFFINITY: "{oops"}}
    cases = [
        (_variant("empty-object", owners=[{"object": {}}]),
         "spec.owners[0].object: Required value: must not be empty: it would match every pod"),
        (_variant("bad-selector", owners=[{"labelSelector": {"matchExpressions": [
            {"key": "app", "operator": "in", "values": ["web"]}]}}]),
         'spec.owners[0].labelSelector.matchExpressions[0].operator: Unsupported value: "in"'),
        (_variant("negative", template=negative),
         'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-200m": '
         "must be greater than or equal to 0"),
        (_variant("bad-affinity", template=affinity),
         "spec.template.metadata.annotations[scheduling.koordinator.sh/reservation-affinity]: "
         'Invalid value: "{oops"'),
    ]
    for obj, message in cases:
        name = obj["metadata"]["name"]
        with pytest.raises(ApiError) as refused:
            client.create(RESERVATIONS, obj)
        text = str(refused.value)
        assert f'admission webhook "{HOOK}" denied the request: Reservation "{name}" is ' \
               "invalid: " in text, text
        assert message in text, text
    assert client.list(RESERVATIONS)["items"] == []


def test_upstream_sample_is_created_and_its_status_written(webhooks: Client) -> None:
    client = webhooks
    stored = client.create(RESERVATIONS, _sample())
    assert stored["spec"]["ttl"] == "24h"  # the CRD default, in place when the hook ran
    stored["status"] = available("node-0")
    assert client.update_status(RESERVATIONS, stored)["status"]["phase"] == "Available"
