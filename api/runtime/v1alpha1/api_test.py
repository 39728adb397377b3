"""RuntimeHookService is wire-compatible with upstream's apis/runtime/v1alpha1/api.proto.

Each message is encoded by hand from the field numbers and types upstream uses (a small
protobuf wire encoder, independent of our stubs) and decoded with our generated code; every
field must come back. The service's method paths and one real gRPC call over a unix socket
complete the check.
"""

from __future__ import annotations

import os
import tempfile
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2

# Module imports, not `from api.runtime.v1alpha1 import ...`: the modules are generated (see the
# package's __init__.py), so the type checker has no source for them (pyproject.toml).
import api.runtime.v1alpha1.api_pb2 as api_pb2
import api.runtime.v1alpha1.api_pb2_grpc as api_pb2_grpc

# --- a minimal protobuf wire encoder ----------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are ten-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def uint(number: int, value: int) -> bytes:
    return key(number, 0) + varint(value)


def length_delimited(number: int, payload: bytes) -> bytes:
    return key(number, 2) + varint(len(payload)) + payload


def string(number: int, value: str) -> bytes:
    return length_delimited(number, value.encode())


def string_map(number: int, entries: dict[str, str]) -> bytes:
    """A map<string,string> field: one entry message (key = 1, value = 2) per item."""
    return b"".join(
        length_delimited(number, string(1, k) + string(2, v)) for k, v in entries.items()
    )


# --- hand-encoded messages with upstream's field numbers ------------------------------------

POD_META = (
    string(1, "nginx-0")  # name
    + string(2, "6f1c3a52-uid")  # uid
    + string(3, "default")  # namespace
    + uint(4, 3)  # attempt (uint32)
)

HUGEPAGE_2M = string(1, "2MB") + uint(2, 1 << 31)  # page_size, limit (uint64)
HUGEPAGE_1G = string(1, "1GB") + uint(2, (1 << 40) + 7)

RESOURCES = (
    uint(1, 100_000)  # cpu_period
    + uint(2, -1)  # cpu_quota (int64, negative: unlimited)
    + uint(3, 1024)  # cpu_shares
    + uint(4, 2 * 1024**3)  # memory_limit_in_bytes
    + uint(5, -998)  # oom_score_adj
    + string(6, "0-3,8")  # cpuset_cpus
    + string(7, "0")  # cpuset_mems
    + length_delimited(8, HUGEPAGE_2M)  # hugepage_limits (repeated)
    + length_delimited(8, HUGEPAGE_1G)
    + string_map(9, {"memory.max": "2147483648", "cpu.weight": "39"})  # unified
    + uint(10, 4 * 1024**3)  # memory_swap_limit_in_bytes
)

CONTAINER_META = string(1, "app") + uint(2, 2) + string(3, "containerd://abc123")


def assert_resources(res: api_pb2.LinuxContainerResources) -> None:
    assert res.cpu_period == 100_000
    assert res.cpu_quota == -1
    assert res.cpu_shares == 1024
    assert res.memory_limit_in_bytes == 2 * 1024**3
    assert res.oom_score_adj == -998
    assert res.cpuset_cpus == "0-3,8"
    assert res.cpuset_mems == "0"
    assert [(h.page_size, h.limit) for h in res.hugepage_limits] == [
        ("2MB", 1 << 31),
        ("1GB", (1 << 40) + 7),
    ]
    assert dict(res.unified) == {"memory.max": "2147483648", "cpu.weight": "39"}
    assert res.memory_swap_limit_in_bytes == 4 * 1024**3


def assert_pod_meta(meta: api_pb2.PodSandboxMetadata) -> None:
    assert (meta.name, meta.uid, meta.namespace, meta.attempt) == (
        "nginx-0",
        "6f1c3a52-uid",
        "default",
        3,
    )


def test_pod_sandbox_metadata() -> None:
    assert_pod_meta(api_pb2.PodSandboxMetadata.FromString(POD_META))


def test_hugepage_limit() -> None:
    limit = api_pb2.HugepageLimit.FromString(HUGEPAGE_1G)
    assert (limit.page_size, limit.limit) == ("1GB", (1 << 40) + 7)


def test_linux_container_resources() -> None:
    assert_resources(api_pb2.LinuxContainerResources.FromString(RESOURCES))


def test_container_metadata() -> None:
    meta = api_pb2.ContainerMetadata.FromString(CONTAINER_META)
    assert (meta.name, meta.attempt, meta.id) == ("app", 2, "containerd://abc123")


def test_pod_sandbox_hook_request() -> None:
    wire = (
        length_delimited(1, POD_META)  # pod_meta
        + string(2, "runc")  # runtime_handler
        + string_map(3, {"app": "nginx"})  # labels
        + string_map(4, {"koordinator.sh/qosClass": "LS"})  # annotations
        + string(5, "/kubepods/burstable/pod6f1c3a52")  # cgroup_parent
        + length_delimited(6, uint(3, 64))  # overhead
        + length_delimited(7, RESOURCES)  # resources
    )
    msg = api_pb2.PodSandboxHookRequest.FromString(wire)
    assert_pod_meta(msg.pod_meta)
    assert msg.runtime_handler == "runc"
    assert dict(msg.labels) == {"app": "nginx"}
    assert dict(msg.annotations) == {"koordinator.sh/qosClass": "LS"}
    assert msg.cgroup_parent == "/kubepods/burstable/pod6f1c3a52"
    assert msg.overhead.cpu_shares == 64
    assert_resources(msg.resources)


def test_pod_sandbox_hook_response() -> None:
    wire = (
        string_map(1, {"added": "label"})  # labels
        + string_map(2, {"added": "annotation"})  # annotations
        + string(3, "/kubepods/besteffort/pod6f1c3a52")  # cgroup_parent
        + length_delimited(4, RESOURCES)  # resources
    )
    msg = api_pb2.PodSandboxHookResponse.FromString(wire)
    assert dict(msg.labels) == {"added": "label"}
    assert dict(msg.annotations) == {"added": "annotation"}
    assert msg.cgroup_parent == "/kubepods/besteffort/pod6f1c3a52"
    assert_resources(msg.resources)


def test_container_resource_hook_request() -> None:
    wire = (
        length_delimited(1, POD_META)  # pod_meta
        + length_delimited(2, CONTAINER_META)  # container_meta
        + string_map(3, {"c-anno": "1"})  # container_annotations
        + length_delimited(4, RESOURCES)  # container_resources
        + length_delimited(5, uint(4, 1 << 30))  # pod_resources
        + string_map(6, {"p-anno": "2"})  # pod_annotations
        + string_map(7, {"p-label": "3"})  # pod_labels
        + string(8, "/kubepods/pod6f1c3a52")  # pod_cgroup_parent
        + string_map(9, {"GOMAXPROCS": "4"})  # container_envs
    )
    msg = api_pb2.ContainerResourceHookRequest.FromString(wire)
    assert_pod_meta(msg.pod_meta)
    assert (
        msg.container_meta.name,
        msg.container_meta.attempt,
        msg.container_meta.id,
    ) == (
        "app",
        2,
        "containerd://abc123",
    )
    assert dict(msg.container_annotations) == {"c-anno": "1"}
    assert_resources(msg.container_resources)
    assert msg.pod_resources.memory_limit_in_bytes == 1 << 30
    assert dict(msg.pod_annotations) == {"p-anno": "2"}
    assert dict(msg.pod_labels) == {"p-label": "3"}
    assert msg.pod_cgroup_parent == "/kubepods/pod6f1c3a52"
    assert dict(msg.container_envs) == {"GOMAXPROCS": "4"}


def test_container_resource_hook_response() -> None:
    wire = (
        string_map(1, {"c-anno": "x"})  # container_annotations
        + length_delimited(2, RESOURCES)  # container_resources
        + string(3, "/kubepods/besteffort")  # pod_cgroup_parent
        + string_map(4, {"ENV": "y"})  # container_envs
    )
    msg = api_pb2.ContainerResourceHookResponse.FromString(wire)
    assert dict(msg.container_annotations) == {"c-anno": "x"}
    assert_resources(msg.container_resources)
    assert msg.pod_cgroup_parent == "/kubepods/besteffort"
    assert dict(msg.container_envs) == {"ENV": "y"}


def test_our_encoding_matches_the_hand_encoding() -> None:
    """Encoding with our stubs gives the same bytes (fields are written in number order)."""
    msg = api_pb2.PodSandboxMetadata(name="nginx-0", uid="6f1c3a52-uid", namespace="default")
    msg.attempt = 3
    assert msg.SerializeToString() == POD_META
    container = api_pb2.ContainerMetadata(name="app", attempt=2, id="containerd://abc123")
    assert container.SerializeToString() == CONTAINER_META


# --- the service ------------------------------------------------------------------------

RPCS = {
    "PreRunPodSandboxHook": ("PodSandboxHookRequest", "PodSandboxHookResponse"),
    "PostStopPodSandboxHook": ("PodSandboxHookRequest", "PodSandboxHookResponse"),
    "PreCreateContainerHook": (
        "ContainerResourceHookRequest",
        "ContainerResourceHookResponse",
    ),
    "PreStartContainerHook": (
        "ContainerResourceHookRequest",
        "ContainerResourceHookResponse",
    ),
    "PostStartContainerHook": (
        "ContainerResourceHookRequest",
        "ContainerResourceHookResponse",
    ),
    "PostStopContainerHook": (
        "ContainerResourceHookRequest",
        "ContainerResourceHookResponse",
    ),
    "PreUpdateContainerResourcesHook": (
        "ContainerResourceHookRequest",
        "ContainerResourceHookResponse",
    ),
}


def test_file_descriptor_matches_upstream() -> None:
    proto = descriptor_pb2.FileDescriptorProto()
    api_pb2.DESCRIPTOR.CopyToProto(proto)
    assert proto.syntax == "proto3"
    assert proto.package == "runtime.v1alpha1"
    assert proto.options.go_package == "github.com/koordinator-sh/koordinator/apis/runtime/v1alpha1"


def test_service_method_paths() -> None:
    service = api_pb2.DESCRIPTOR.services_by_name["RuntimeHookService"]
    assert service.full_name == "runtime.v1alpha1.RuntimeHookService"
    methods = {m.name: m for m in service.methods}
    assert set(methods) == set(RPCS)
    for name, (request, response) in RPCS.items():
        method = methods[name]
        path = f"/{service.full_name}/{method.name}"
        assert path == f"/runtime.v1alpha1.RuntimeHookService/{name}"
        assert method.input_type.full_name == f"runtime.v1alpha1.{request}"
        assert method.output_type.full_name == f"runtime.v1alpha1.{response}"
        assert not method.client_streaming and not method.server_streaming


def test_stubs_come_from_the_bazel_genrule_under_bazel() -> None:
    generated_dir = Path(api_pb2.__file__).parent.name
    if os.environ.get("TEST_SRCDIR"):
        assert generated_dir == "v1alpha1"  # the genrule's output beside __init__.py
    else:
        assert generated_dir == "_generated"  # generated on import, gitignored


class _Servicer(api_pb2_grpc.RuntimeHookServiceServicer):
    def PreCreateContainerHook(self, request, context):  # noqa: N802 (gRPC method name)
        return api_pb2.ContainerResourceHookResponse(
            container_annotations={"seen": request.container_meta.name},
            container_resources=api_pb2.LinuxContainerResources(
                cpu_shares=request.container_resources.cpu_shares * 2
            ),
            pod_cgroup_parent=request.pod_cgroup_parent + "/besteffort",
            container_envs=dict(request.container_envs),
        )


def test_grpc_round_trip_over_unix_socket() -> None:
    # A short directory: unix socket paths are limited to 107 bytes, and Bazel's test
    # directories are deeper than that.
    with tempfile.TemporaryDirectory(prefix="koord-", dir="/tmp") as tmp:
        _round_trip(Path(tmp) / "koordlet-runtimehookserver.sock")


def _round_trip(socket: Path) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_RuntimeHookServiceServicer_to_server(_Servicer(), server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    try:
        with grpc.insecure_channel(f"unix://{socket}") as channel:
            stub = api_pb2_grpc.RuntimeHookServiceStub(channel)
            response = stub.PreCreateContainerHook(
                api_pb2.ContainerResourceHookRequest(
                    container_meta=api_pb2.ContainerMetadata(name="app"),
                    container_resources=api_pb2.LinuxContainerResources(cpu_shares=512),
                    pod_cgroup_parent="/kubepods",
                    container_envs={"A": "1"},
                ),
                timeout=10,
            )
            assert dict(response.container_annotations) == {"seen": "app"}
            assert response.container_resources.cpu_shares == 1024
            assert response.pod_cgroup_parent == "/kubepods/besteffort"
            assert dict(response.container_envs) == {"A": "1"}

            # An RPC the servicer does not implement answers UNIMPLEMENTED, as upstream's.
            with pytest.raises(grpc.RpcError) as err:
                stub.PostStopPodSandboxHook(api_pb2.PodSandboxHookRequest(), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.stop(grace=None)
