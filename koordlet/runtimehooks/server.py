"""The RuntimeHookService gRPC server (upstream `pkg/koordlet/runtimehooks/proxyserver`).

Each RPC initialises the response from the request, converts the request to a
:class:`HookRequest`, runs the stage's hooks and applies the result: pod values go into the
response's resources and become pod cgroup updates (handed to ``apply_updates``); container values
go into ``container_resources`` only (koordlet never writes container cgroups in proxy mode).
A malformed request (unparsable annotation, negative resources) is answered INVALID_ARGUMENT.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from concurrent import futures

import grpc

import api.runtime.v1alpha1.api_pb2 as api_pb2
import api.runtime.v1alpha1.api_pb2_grpc as api_pb2_grpc
from api.errors import MalformedValueError
from api.extension.resource import ANNOTATION_EXTENDED_RESOURCE_SPEC, parse_extended_resource_spec
from koordlet.runtimehooks.hooks.hooks import FailurePolicy, run_hooks, stages_with_hooks
from koordlet.runtimehooks.protocol import (
    HookRequest,
    Resources,
    Stage,
    extended_resources_from_spec,
)
from koordlet.runtimehooks.reconciler import CgroupUpdate, pod_updates
from koordlet.runtimehooks.registry import RUNTIME_HOOKS
from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

ApplyUpdates = Callable[[list[CgroupUpdate]], object]  # a result, if any, is not read


class InvalidRequest(ValueError):
    """The request cannot be turned into a hook context."""


def _check_resources(what: str, res: api_pb2.LinuxContainerResources) -> None:
    for name in ("cpu_period", "cpu_shares"):
        if getattr(res, name) < 0:
            raise InvalidRequest(f"{what}.{name} = {getattr(res, name)} is negative")


def _request(meta: api_pb2.PodSandboxMetadata, labels, annotations, cgroup_parent: str,
             container: api_pb2.ContainerMetadata | None = None) -> HookRequest:
    try:
        spec = parse_extended_resource_spec(annotations)
        extended = extended_resources_from_spec(ANNOTATION_EXTENDED_RESOURCE_SPEC, spec)
    except MalformedValueError as exc:
        raise InvalidRequest(str(exc)) from None
    return HookRequest(
        pod_name=meta.name, pod_namespace=meta.namespace, pod_uid=meta.uid,
        labels=dict(labels), annotations=dict(annotations),
        cgroup_parent=cgroup_parent, extended_resources=extended,
        container_name=None if container is None else container.name,
        container_id="" if container is None else container.id,
    )


def _copy_into(res: api_pb2.LinuxContainerResources, values: Resources) -> None:
    if values.cpuset is not None:
        res.cpuset_cpus = values.cpuset
    if values.cpu_shares is not None:
        res.cpu_shares = values.cpu_shares
    if values.cfs_quota is not None:
        res.cpu_quota = values.cfs_quota
    if values.memory_limit is not None:
        res.memory_limit_in_bytes = values.memory_limit


class RuntimeHookServer(api_pb2_grpc.RuntimeHookServiceServicer):
    """The servicer; ``rules`` is read on every call, so rule updates apply to the next RPC."""

    def __init__(self, rules: Rules, plugin_failure_policy: FailurePolicy = FailurePolicy.IGNORE,
                 apply_updates: ApplyUpdates | None = None) -> None:
        self.rules = rules
        self.plugin_failure_policy = plugin_failure_policy
        self.apply_updates = apply_updates

    def _pod(self, stage: Stage, request: api_pb2.PodSandboxHookRequest,
             context: grpc.ServicerContext) -> api_pb2.PodSandboxHookResponse:
        response = api_pb2.PodSandboxHookResponse(
            labels=request.labels, annotations=request.annotations,
            cgroup_parent=request.cgroup_parent, resources=request.resources)
        try:
            _check_resources("resources", request.resources)
            req = _request(request.pod_meta, request.labels, request.annotations,
                           request.cgroup_parent)
        except InvalidRequest as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{stage}: {exc}")
        result = run_hooks(RUNTIME_HOOKS.values(), stage, req, self.rules,
                           self.plugin_failure_policy)
        # What ran before a failing hook is still applied, as upstream.
        updates = pod_updates(request.cgroup_parent, result.resources)
        if updates and self.apply_updates is not None:
            self.apply_updates(updates)
        if result.error is not None:
            context.abort(grpc.StatusCode.UNKNOWN, str(result.error))
        _copy_into(response.resources, result.resources)
        return response

    def _container(self, stage: Stage, request: api_pb2.ContainerResourceHookRequest,
                   context: grpc.ServicerContext) -> api_pb2.ContainerResourceHookResponse:
        response = api_pb2.ContainerResourceHookResponse(
            container_annotations=request.container_annotations,
            container_resources=request.container_resources,
            pod_cgroup_parent=request.pod_cgroup_parent,
            container_envs=request.container_envs)
        try:
            _check_resources("container_resources", request.container_resources)
            _check_resources("pod_resources", request.pod_resources)
            req = _request(request.pod_meta, request.pod_labels, request.pod_annotations,
                           request.pod_cgroup_parent, request.container_meta)
        except InvalidRequest as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{stage}: {exc}")
        result = run_hooks(RUNTIME_HOOKS.values(), stage, req, self.rules,
                           self.plugin_failure_policy)
        if result.error is not None:
            context.abort(grpc.StatusCode.UNKNOWN, str(result.error))
        _copy_into(response.container_resources, result.resources)
        return response

    def PreRunPodSandboxHook(self, request, context):  # noqa: N802 (gRPC method names)
        return self._pod(Stage.PRE_RUN_POD_SANDBOX, request, context)

    def PostStopPodSandboxHook(self, request, context):  # noqa: N802
        return self._pod(Stage.POST_STOP_POD_SANDBOX, request, context)

    def PreCreateContainerHook(self, request, context):  # noqa: N802
        return self._container(Stage.PRE_CREATE_CONTAINER, request, context)

    def PreStartContainerHook(self, request, context):  # noqa: N802
        return self._container(Stage.PRE_START_CONTAINER, request, context)

    def PostStartContainerHook(self, request, context):  # noqa: N802
        return self._container(Stage.POST_START_CONTAINER, request, context)

    def PostStopContainerHook(self, request, context):  # noqa: N802
        return self._container(Stage.POST_STOP_CONTAINER, request, context)

    def PreUpdateContainerResourcesHook(self, request, context):  # noqa: N802
        return self._container(Stage.PRE_UPDATE_CONTAINER_RESOURCES, request, context)


def serve(servicer: RuntimeHookServer, socket_path: str, max_workers: int = 4) -> grpc.Server:
    """Start serving on a unix socket; an existing socket file is unlinked first, as upstream."""
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
    api_pb2_grpc.add_RuntimeHookServiceServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{socket_path}")
    server.start()
    return server


HOOK_CONFIG_NAME = "koordlet.json"


def write_hook_config(config_path: str, host_endpoint: str, failure_policy: FailurePolicy,
                      disable_stages: list[str] | tuple[str, ...] = ()) -> str:
    """Register with koord-runtime-proxy: `<config_path>/koordlet.json`, tab-indented as
    upstream, listing the stages that have hooks and are not disabled. Returns the file path.
    A disabled stage that does not exist is logged and otherwise ignored, as upstream."""
    unknown = sorted(set(disable_stages) - set(Stage))
    if unknown:
        logger.error("--runtime-hooks-disable-stages: unknown stage %s ignored; the stages are %s",
                     ", ".join(unknown), ", ".join(Stage))
    stages = stages_with_hooks(RUNTIME_HOOKS.values())
    config = {
        "remote-endpoint": host_endpoint,
        "failure-policy": str(failure_policy),
        "runtime-hooks": [str(s) for s in stages if s not in disable_stages],
    }
    os.makedirs(config_path, exist_ok=True)
    path = os.path.join(config_path, HOOK_CONFIG_NAME)
    with open(path, "w") as f:
        json.dump(config, f, indent="\t")
    return path
