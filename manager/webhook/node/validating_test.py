"""``/validate-node``: a node whose new labels fall under two node strategies is refused."""

from __future__ import annotations

import json
from typing import Any

from manager.webhook.admission import AdmissionRequest
from manager.webhook.node.validating import NodeValidatingHandler
from pkg.client import ApiError

STRATEGIES = json.dumps({"nodeStrategies": [
    {"name": "pool-a", "nodeSelector": {"matchLabels": {"pool": "a"}}},
    {"name": "gpu", "nodeSelector": {"matchLabels": {"gpu": "true"}}}]})


class FakeClient:
    def __init__(self, data: dict[str, str] | None) -> None:
        self.data = data

    def get(self, resource: Any, name: str, namespace: str | None = None) -> dict:
        if self.data is None:
            raise ApiError(404, "NotFound", f'configmaps "{name}" not found')
        assert (namespace, name) == ("koordinator-system", "slo-controller-config")
        return {"metadata": {"name": name, "namespace": namespace}, "data": self.data}

    def list_all(self, resource: Any) -> dict:
        raise AssertionError("the node webhook only gets its ConfigMap")


def node(**labels: str) -> dict:
    return {"metadata": {"name": "n1", "labels": labels}}


def validate(data: dict[str, str] | None, op: str, new: dict, old: dict | None = None):
    req = AdmissionRequest(uid="u", operation=op, resource="nodes", name="n1", object=new,
                           old_object=old)
    return NodeValidatingHandler(FakeClient(data))(req)


def test_label_change_into_two_strategies_is_rejected() -> None:
    resp = validate({"resource-threshold-config": STRATEGIES}, "UPDATE",
                    node(pool="a", gpu="true"), node(pool="a"))
    assert not resp.allowed and resp.code == 400
    body = json.loads(resp.message)
    assert body["reason"] == "ExistNodeConfict"
    assert "resource-threshold-config" in body["message"] and "n1" in body["message"]
    assert "pool-a" in body["message"] and "gpu" in body["message"]


def test_allowed_cases() -> None:
    cfg = {"resource-threshold-config": STRATEGIES}
    # one strategy only
    assert validate(cfg, "UPDATE", node(pool="a", zone="z"), node(pool="a")).allowed
    # labels unchanged: not re-checked even though the node conflicts
    both = node(pool="a", gpu="true")
    assert validate(cfg, "UPDATE", both, both).allowed
    # CREATE only logs
    assert validate(cfg, "CREATE", both).allowed
    # status updates are not this webhook's business
    req = AdmissionRequest(uid="u", operation="UPDATE", resource="nodes", sub_resource="status",
                           object=both, old_object=node())
    assert NodeValidatingHandler(FakeClient(cfg))(req).allowed
    # no ConfigMap, or a key that does not parse: nothing to conflict with
    assert validate(None, "UPDATE", both, node()).allowed
    assert validate({"resource-threshold-config": "{oops"}, "UPDATE", both, node()).allowed
