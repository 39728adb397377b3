"""A real gRPC client calls every RuntimeHookService rpc over a unix socket."""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

import api.runtime.v1alpha1.api_pb2 as api_pb2
import api.runtime.v1alpha1.api_pb2_grpc as api_pb2_grpc
from koordlet.runtimehooks.hooks.hooks import FailurePolicy
from koordlet.runtimehooks.reconciler import CgroupUpdate
from koordlet.runtimehooks.rule import Rules
from koordlet.runtimehooks.server import RuntimeHookServer, serve, write_hook_config
from koordlet.runtimehooks.testing import BE_LABELS, GI, batch, extended_spec_annotation

POD_DIR = "kubepods/besteffort/poduid-1"
RESOURCE_STATUS = "scheduling.koordinator.sh/resource-status"
C0 = {"requests": batch("500", "2Gi"), "limits": batch("500", "2Gi")}


class Harness:
    def __init__(self, policy: FailurePolicy) -> None:
        self.applied: list[CgroupUpdate] = []
        self.servicer = RuntimeHookServer(Rules(), policy, self.applied.extend)
        # Unix socket paths are limited to 107 bytes; pytest's tmp_path can be longer.
        self._dir = tempfile.TemporaryDirectory(prefix="koordlet-hooks-", dir="/tmp")
        socket = str(Path(self._dir.name) / "koordlet.sock")
        Path(socket).touch()  # a stale socket file is replaced
        self.server = serve(self.servicer, socket)
        self.channel = grpc.insecure_channel(f"unix://{socket}")
        self.stub = api_pb2_grpc.RuntimeHookServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.server.stop(grace=None)
        self._dir.cleanup()


@pytest.fixture
def hooks() -> Iterator[Harness]:
    harness = Harness(FailurePolicy.IGNORE)
    yield harness
    harness.close()


@pytest.fixture
def failing_hooks() -> Iterator[Harness]:
    harness = Harness(FailurePolicy.FAIL)
    yield harness
    harness.close()


def pod_request(annotations: dict[str, str], labels=BE_LABELS) -> api_pb2.PodSandboxHookRequest:
    return api_pb2.PodSandboxHookRequest(
        pod_meta=api_pb2.PodSandboxMetadata(name="be-0", namespace="default", uid="uid-1"),
        labels=labels, annotations=annotations, cgroup_parent=POD_DIR,
        resources=api_pb2.LinuxContainerResources(cpu_shares=2, cpuset_mems="0"))


def container_request(annotations: dict[str, str], labels=BE_LABELS,
                      shares: int = 2) -> api_pb2.ContainerResourceHookRequest:
    return api_pb2.ContainerResourceHookRequest(
        pod_meta=api_pb2.PodSandboxMetadata(name="be-0", namespace="default", uid="uid-1"),
        container_meta=api_pb2.ContainerMetadata(name="c0", id="containerd://abc"),
        container_annotations={"io.kubernetes.container.name": "c0"},
        container_resources=api_pb2.LinuxContainerResources(cpu_shares=shares, cpuset_mems="0"),
        pod_annotations=annotations, pod_labels=labels, pod_cgroup_parent=POD_DIR,
        container_envs={"A": "1"})


def test_pre_run_pod_sandbox_sets_and_writes_pod_values(hooks: Harness) -> None:
    response = hooks.stub.PreRunPodSandboxHook(
        pod_request(extended_spec_annotation({"c0": C0})), timeout=10)
    assert (response.resources.cpu_shares, response.resources.cpu_quota,
            response.resources.memory_limit_in_bytes) == (512, 50000, 2 * GI)
    assert response.resources.cpuset_mems == "0"  # initialised from the request
    assert response.cgroup_parent == POD_DIR and dict(response.labels) == BE_LABELS
    assert hooks.applied == [
        CgroupUpdate(POD_DIR, "cpu.shares", "512"),
        CgroupUpdate(POD_DIR, "cpu.cfs_quota_us", "50000"),
        CgroupUpdate(POD_DIR, "memory.limit_in_bytes", str(2 * GI)),
    ]


@pytest.mark.parametrize("rpc", ["PreCreateContainerHook", "PreUpdateContainerResourcesHook"])
def test_container_values_go_into_the_response_only(hooks: Harness, rpc: str) -> None:
    response = getattr(hooks.stub, rpc)(
        container_request(extended_spec_annotation({"c0": C0})), timeout=10)
    res = response.container_resources
    assert (res.cpu_shares, res.cpu_quota, res.memory_limit_in_bytes) == (512, 50000, 2 * GI)
    assert dict(response.container_envs) == {"A": "1"}
    assert response.pod_cgroup_parent == POD_DIR
    assert hooks.applied == []  # proxy mode never writes container cgroups


def test_cpuset_pod_gets_its_cpus_and_no_quota(hooks: Harness) -> None:
    annotations = extended_spec_annotation({"c0": C0}) | {
        RESOURCE_STATUS: json.dumps({"cpuset": "2-3"})}
    response = hooks.stub.PreCreateContainerHook(container_request(annotations), timeout=10)
    assert response.container_resources.cpuset_cpus == "2-3"
    assert response.container_resources.cpu_quota == -1  # CPUSetAllocator runs after BatchResource


@pytest.mark.parametrize("rpc", ["PreStartContainerHook", "PostStartContainerHook",
                                 "PostStopContainerHook"])
def test_stages_without_hooks_echo_the_request(hooks: Harness, rpc: str) -> None:
    request = container_request(extended_spec_annotation({"c0": C0}), shares=77)
    response = getattr(hooks.stub, rpc)(request, timeout=10)
    assert response.container_resources == request.container_resources
    assert dict(response.container_annotations) == {"io.kubernetes.container.name": "c0"}
    assert dict(response.container_envs) == {"A": "1"}


def test_post_stop_pod_sandbox_echoes_the_request(hooks: Harness) -> None:
    request = pod_request(extended_spec_annotation({"c0": C0}))
    response = hooks.stub.PostStopPodSandboxHook(request, timeout=10)
    assert response.resources == request.resources
    assert hooks.applied == []


@pytest.mark.parametrize(("annotations", "resources", "message"), [
    ({"node.koordinator.sh/extended-resource-spec": "{garbage"}, {}, "extended-resource-spec"),
    (extended_spec_annotation({"c0": {"limits": {"kubernetes.io/batch-cpu": "lots"}}}), {},
     "extended-resource-spec"),
    ({}, {"cpu_shares": -5}, "cpu_shares = -5 is negative"),
])
def test_malformed_request_is_refused_and_the_server_keeps_serving(
        hooks: Harness, annotations, resources, message) -> None:
    request = container_request(annotations)
    request.container_resources.MergeFrom(api_pb2.LinuxContainerResources(**resources))
    with pytest.raises(grpc.RpcError) as err:
        hooks.stub.PreCreateContainerHook(request, timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = err.value.details() or ""
    assert message in details
    assert "PreCreateContainer" in details
    ok = hooks.stub.PreCreateContainerHook(
        container_request(extended_spec_annotation({"c0": C0})), timeout=10)
    assert ok.container_resources.cpu_shares == 512


def test_malformed_pod_request_is_refused(hooks: Harness) -> None:
    with pytest.raises(grpc.RpcError) as err:
        hooks.stub.PreRunPodSandboxHook(
            pod_request({"node.koordinator.sh/extended-resource-spec": "[]"}), timeout=10)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "PreRunPodSandbox" in (err.value.details() or "")
    assert hooks.applied == []
    response = hooks.stub.PreRunPodSandboxHook(
        pod_request(extended_spec_annotation({"c0": C0})), timeout=10)
    assert response.resources.cpu_shares == 512


def test_hook_error_under_fail_policy(failing_hooks: Harness) -> None:
    annotations = extended_spec_annotation({"c0": C0}) | {RESOURCE_STATUS: "{not json"}
    with pytest.raises(grpc.RpcError) as err:
        failing_hooks.stub.PreRunPodSandboxHook(pod_request(annotations), timeout=10)
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert "CPUSetAllocator" in (err.value.details() or "")
    # BatchResource ran before the failing hook: its pod writes still happen.
    assert CgroupUpdate(POD_DIR, "cpu.shares", "512") in failing_hooks.applied


def test_hook_error_under_ignore_policy_still_answers(hooks: Harness) -> None:
    annotations = extended_spec_annotation({"c0": C0}) | {RESOURCE_STATUS: "{not json"}
    response = hooks.stub.PreCreateContainerHook(container_request(annotations), timeout=10)
    assert response.container_resources.cpu_shares == 512


def test_hook_config_registers_the_stages_with_hooks(tmp_path: Path) -> None:
    path = write_hook_config(str(tmp_path / "hooks"), "/var/run/koordlet/koordlet.sock",
                             FailurePolicy.IGNORE, ["PreUpdateContainerResources"])
    text = Path(path).read_text()
    assert Path(path).name == "koordlet.json" and '\n\t"remote-endpoint"' in text
    assert json.loads(text) == {
        "remote-endpoint": "/var/run/koordlet/koordlet.sock",
        "failure-policy": "Ignore",
        "runtime-hooks": ["PreRunPodSandbox", "PreCreateContainer"],
    }


def test_an_unknown_disabled_stage_is_an_error_naming_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        path = write_hook_config(str(tmp_path), "/var/run/koordlet/koordlet.sock",
                                 FailurePolicy.IGNORE, ["PreRunPodSandBox"])
    assert "unknown stage PreRunPodSandBox" in caplog.text
    assert json.loads(Path(path).read_text())["runtime-hooks"] == [
        "PreRunPodSandbox", "PreCreateContainer", "PreUpdateContainerResources"]
