"""Tests of the strict structural check of built-in objects (builtin_schema.py), alone and as
the embedded server applies it under fieldValidation=Strict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from test.apiserver.builtin_schema import check_builtin, has_model, model_name, unknown_fields
from test.apiserver.server import ServerHandle, start
from test.apiserver.testing import expect_status, http_request


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "c", "image": "busybox", "args": ["--v=4"],
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "readinessProbe": {"httpGet": {"path": "healthz", "port": 80}},
                    "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                    "securityContext": {"privileged": True},
                }], "tolerations": None},
            },
        },
    }


def test_model_names_follow_the_clients_convention() -> None:
    assert model_name("apps/v1", "Deployment") == "V1Deployment"
    assert model_name("v1", "Service") == "V1Service"
    assert model_name("autoscaling/v2", "HorizontalPodAutoscaler") == "V2HorizontalPodAutoscaler"
    assert has_model("rbac.authorization.k8s.io/v1", "ClusterRole")
    assert not has_model("monitoring.coreos.com/v1", "PodMonitor")


def test_a_valid_deployment_passes_int_or_string_quantities_and_nulls_included() -> None:
    assert check_builtin(deployment()) == []


def test_unknown_fields_are_named_by_their_json_path() -> None:
    d = deployment()
    d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    d["spec"]["replica"] = 3
    assert sorted(check_builtin(d)) == [
        'Deployment ns/web: unknown field "spec.replica"',
        'Deployment ns/web: unknown field '
        '"spec.template.spec.containers[0].imagePullPolicyy"',
    ]


def test_wrong_primitive_and_structure_types_are_errors() -> None:
    d = deployment()
    d["spec"]["replicas"] = "2"
    d["spec"]["template"]["spec"]["containers"][0]["args"] = "--v=4"
    d["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = "true"
    problems = check_builtin(d)
    assert "Deployment ns/web: spec.replicas: expected integer, got str '2'" in problems
    assert ("Deployment ns/web: spec.template.spec.containers[0].args: expected array, "
            "got str '--v=4'") in problems
    assert any("securityContext.privileged: expected boolean" in p for p in problems)
    assert len(problems) == 3


def test_map_keys_are_free_and_values_typed() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
          "data": {"any-key": "v", "n": 1}}
    assert check_builtin(cm) == ["ConfigMap c: data.n: expected string, got int 1"]


def test_kinds_without_a_model_are_not_checked() -> None:
    assert check_builtin({"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
                          "spec": {"anything": 1}}) == []


def test_unknown_fields_lists_only_the_undeclared_paths() -> None:
    d = deployment()
    d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    d["spec"]["replicas"] = "2"
    assert unknown_fields(d) == ["spec.template.spec.containers[0].imagePullPolicyy"]
    assert unknown_fields(deployment()) == []


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    srv = start()
    try:
        yield srv
    finally:
        srv.stop()


def test_the_server_rejects_unknown_built_in_fields_only_under_strict(
        server: ServerHandle) -> None:
    d = deployment()
    d["metadata"]["namespace"] = "default"
    d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    path = "/apis/apps/v1/namespaces/default/deployments"
    code, body = http_request(server, "POST", path + "?fieldValidation=Strict",
                              json.dumps(d).encode())
    assert code == 400, body
    assert expect_status(body, 400, "BadRequest") == (
        'strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy"')
    code, body = http_request(server, "POST", path, json.dumps(d).encode())
    assert code == 201, body
