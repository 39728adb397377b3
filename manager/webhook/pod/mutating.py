"""``/mutate-pod``: the pod mutating webhook.

Corresponds to upstream ``pkg/webhook/pod/mutating``. Only
CREATE of ``pods`` (no subresource) is mutated: ClusterColocationProfiles, then the
extended-resource-spec annotation, then the MultiQuotaTree node affinity, then GPU request
rewriting. The answer is a JSON patch from the pod as sent to the mutated pod; a failing step
answers 500 (the pod is rejected under ``failurePolicy: Fail``).
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

from api.errors import MalformedValueError
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import (
    COLOCATION_PROFILE_SKIP_MUTATING_RESOURCES,
    DISABLE_DEVICE_RESOURCE_SPEC,
    DISABLE_EXTENDED_RESOURCE_SPEC,
    MULTI_QUOTA_TREE,
    POD_MUTATING_WEBHOOK,
)

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored, patch_response
from ..cached_reader import Reader
from ..configuration import MUTATE_POD
from ..elasticquota.topology import QuotaTopology
from ..framework import HandlerBuilder
from .colocation_profile import MutationError, ProfileMatcher, mutate_by_profiles
from .extended_resource import set_device_resource_spec, set_extended_resource_spec
from .multi_quota_tree_affinity import add_node_affinity_for_multi_quota_tree

log = logging.getLogger(__name__)


@dataclass(slots=True)
class PodMutatingHandler:
    client: Reader  # the API client or the server's informer cache
    gate: FeatureGate = default_feature_gate
    matcher: ProfileMatcher | None = field(default=None)
    topology: QuotaTopology | None = None  # the quota tree, for the MultiQuotaTree step

    def __post_init__(self) -> None:
        if self.matcher is None:
            self.matcher = ProfileMatcher(self.client)

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "pods" or req.sub_resource:
            return allowed()
        if req.object is None:
            return errored(400, "pod mutating webhook: request has no object")
        if req.operation != "CREATE":
            return allowed()
        original = req.object
        pod = copy.deepcopy(original)
        md = pod.setdefault("metadata", {})
        # The request namespace is used while mutating, never written back by the patch.
        set_ns = not md.get("namespace")
        if set_ns:
            md["namespace"] = req.namespace
        assert self.matcher is not None
        try:
            pod = mutate_by_profiles(
                self.client, self.matcher, pod, md["namespace"],
                skip_resources=self.gate.enabled(COLOCATION_PROFILE_SKIP_MUTATING_RESOURCES))
            if not self.gate.enabled(DISABLE_EXTENDED_RESOURCE_SPEC):
                set_extended_resource_spec(pod)
            if self.topology is not None and self.gate.enabled(MULTI_QUOTA_TREE):
                add_node_affinity_for_multi_quota_tree(self.topology, self.client, pod)
            if not self.gate.enabled(DISABLE_DEVICE_RESOURCE_SPEC):
                set_device_resource_spec(pod)
        except (MutationError, MalformedValueError) as e:
            name = md.get("name") or md.get("generateName") or ""
            log.error("failed to mutate pod %s/%s: %s", md["namespace"], name, e)
            return errored(500, str(e))
        if set_ns:
            pod["metadata"].pop("namespace", None)
        return patch_response(original, pod)


HANDLER_BUILDERS = (
    HandlerBuilder(MUTATE_POD, POD_MUTATING_WEBHOOK,
                   lambda ctx: PodMutatingHandler(
                       ctx.reader, ctx.gate, ProfileMatcher(ctx.reader, recorder=ctx.recorder),
                       ctx.topology)),
)


__all__ = ["HANDLER_BUILDERS", "PodMutatingHandler"]
