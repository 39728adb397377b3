"""The ElasticQuota mutating and validating handlers.

Corresponds to upstream ``pkg/webhook/elasticquota/mutating`` (defaults: parent label, tree
ID inherited from the parent, shared-weight aligned to ``spec.max``) and
``pkg/webhook/elasticquota/validating`` (``ValidAddQuota``, ``ValidUpdateQuota``,
``ValidDeleteQuota`` on the shared QuotaTopology). Neither changes the tree: the informer
feeds it (``topology``); before a check, the quotas it names are settled against the API
server, so one just created or deleted is seen as it is stored.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass

from api.extension.elastic_quota import (
    ANNOTATION_SHARED_WEIGHT,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
    ROOT_QUOTA_NAME,
    get_parent_quota_name,
)
from pkg.features.features import ELASTIC_MUTATING_WEBHOOK, ELASTIC_VALIDATING_WEBHOOK

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored, patch_response
from ..configuration import MUTATE_ELASTIC_QUOTA, VALIDATE_ELASTIC_QUOTA
from ..framework import HandlerBuilder
from .topology import Obj, QuotaError, QuotaTopology

# How long a check waits for the informer to catch up with a quota stored (or deleted) a
# moment ago; well inside the webhook's 10 s timeout.
SETTLE_TIMEOUT = 3.0


def _parent(quota: Obj) -> str:
    md = quota.get("metadata") or {}
    return get_parent_quota_name(md.get("name", ""), md.get("labels"))


@dataclass(slots=True)
class QuotaMutatingHandler:
    topology: QuotaTopology

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "elasticquotas" or req.operation != "CREATE" or req.object is None:
            return allowed()
        quota = copy.deepcopy(req.object)
        md = quota.setdefault("metadata", {})
        name = md.get("name", "")
        if name == ROOT_QUOTA_NAME:
            return allowed()
        labels = dict(md.get("labels") or {})
        if not labels.get(LABEL_QUOTA_PARENT):
            labels[LABEL_QUOTA_PARENT] = ROOT_QUOTA_NAME
        parent = labels[LABEL_QUOTA_PARENT]
        if not labels.get(LABEL_QUOTA_TREE_ID) and parent != ROOT_QUOTA_NAME:
            self.topology.settle({parent: True}, SETTLE_TIMEOUT)
            info = self.topology.get(parent)
            if info is None:
                # Upstream answers 500; the cause is the user's label, so a 400 naming it.
                return errored(400, f"fill quota {name} failed, parent not exist: "
                                    f"metadata.labels[{LABEL_QUOTA_PARENT}]: "
                                    f"ElasticQuota {parent!r} not found")
            if info.tree_id:
                labels[LABEL_QUOTA_TREE_ID] = info.tree_id
        md["labels"] = labels
        spec_max = (quota.get("spec") or {}).get("max") or {}
        annotations = dict(md.get("annotations") or {})
        raw = annotations.get(ANNOTATION_SHARED_WEIGHT)
        if not raw:
            annotations[ANNOTATION_SHARED_WEIGHT] = json.dumps(spec_max, separators=(",", ":"),
                                                               sort_keys=True)
        else:
            try:
                weight = json.loads(raw)
                if not isinstance(weight, dict):
                    raise ValueError("not an object")
            except ValueError as e:
                return errored(400, f"metadata.annotations[{ANNOTATION_SHARED_WEIGHT}]: "
                                    f"invalid JSON resource list: {e}")
            aligned = {k: weight.get(k, v) for k, v in spec_max.items()}
            if aligned != weight:
                annotations[ANNOTATION_SHARED_WEIGHT] = json.dumps(
                    aligned, separators=(",", ":"), sort_keys=True)
        md["annotations"] = annotations
        return patch_response(req.object, quota)


def _expected(req: AdmissionRequest) -> dict[str, bool]:
    """The quotas a check relies on: the quota itself (absent on create, present otherwise)
    and its parent."""
    obj = req.object or req.old_object or {}
    name = req.name or (obj.get("metadata") or {}).get("name", "")
    expected = {name: req.operation != "CREATE"}
    if req.object is not None and _parent(req.object) not in ("", ROOT_QUOTA_NAME):
        expected[_parent(req.object)] = True
    return expected


@dataclass(slots=True)
class QuotaValidatingHandler:
    topology: QuotaTopology

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "elasticquotas":
            return allowed()
        self.topology.settle(_expected(req), SETTLE_TIMEOUT)
        try:
            if req.operation == "CREATE" and req.object is not None:
                self.topology.valid_add(req.object)
            elif req.operation == "UPDATE" and req.object is not None and \
                    req.old_object is not None:
                self.topology.valid_update(req.old_object, req.object)
            elif req.operation == "DELETE" and req.old_object is not None:
                self.topology.valid_delete(req.old_object)
        except QuotaError as e:
            return errored(400, str(e))
        return allowed()


HANDLER_BUILDERS = (
    HandlerBuilder(MUTATE_ELASTIC_QUOTA, ELASTIC_MUTATING_WEBHOOK,
                   lambda ctx: QuotaMutatingHandler(ctx.topology)),
    HandlerBuilder(VALIDATE_ELASTIC_QUOTA, ELASTIC_VALIDATING_WEBHOOK,
                   lambda ctx: QuotaValidatingHandler(ctx.topology)),
)


__all__ = ["HANDLER_BUILDERS", "QuotaMutatingHandler", "QuotaValidatingHandler"]
