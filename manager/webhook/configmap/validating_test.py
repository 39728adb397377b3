"""The slo-controller-config validating webhook refuses JSON nested too deep, with the message
koord-manager's own parsing gives, for every key (upstream ``pkg/webhook/cm/validating``
checks five)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from api.configuration import parse_slo_controller_config_lenient
from api.configuration.slo_controller_config import KEY_PARSERS
from manager.webhook.admission import AdmissionRequest
from manager.webhook.configmap.validating import ConfigMapValidatingHandler

DEEP = "[" * 5000 + "]" * 5000
OBJ = "configmap koordinator-system/slo-controller-config"


class NoNodes:
    def list_all(self, resource: Any, namespace: str | None = None, **_: Any) -> dict:
        return {"items": []}


def create(data: dict[str, str]) -> AdmissionRequest:
    return AdmissionRequest(
        uid="u", operation="CREATE", resource="configmaps", namespace="koordinator-system",
        object={"metadata": {"name": "slo-controller-config", "namespace": "koordinator-system"},
                "data": data})


@pytest.mark.parametrize("key", sorted(KEY_PARSERS))  # upstream checks only five keys
@pytest.mark.parametrize("text", [DEEP, '{"nodeStrategies": ' + DEEP + "}"],
                         ids=["array-5000-deep", "field-5000-deep"])
def test_deeply_nested_value_is_refused_with_the_managers_message(key: str, text: str) -> None:
    resp = ConfigMapValidatingHandler(NoNodes())(create({key: text}))  # type: ignore[arg-type]
    assert (resp.allowed, resp.code) == (False, 400)
    body = json.loads(resp.message)
    assert body["reason"] == "ParseConfigFail"
    _, errors = parse_slo_controller_config_lenient({key: text}, obj=OBJ)
    assert body["message"] == str(errors[0]) == (
        f"{OBJ}: invalid value for {key!r}: invalid JSON: JSON nested more than 100 levels deep")


def test_nesting_within_the_bound_is_admitted() -> None:
    text = json.dumps({"enable": True, "unknownField": json.loads("[" * 50 + "]" * 50)})
    resp = ConfigMapValidatingHandler(NoNodes())(  # type: ignore[arg-type]
        create({"colocation-config": text}))
    assert resp.allowed


def test_other_unchecked_keys_stay_unchecked_below_the_bound() -> None:
    # As upstream: host-application-config and the like are not validated at admission.
    resp = ConfigMapValidatingHandler(NoNodes())(  # type: ignore[arg-type]
        create({"host-application-config": "{not json"}))
    assert resp.allowed
