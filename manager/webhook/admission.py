"""AdmissionReview v1 in and out: requests, responses and JSON patches.

Corresponds to controller-runtime's ``pkg/webhook/admission`` as upstream koordinator's
``pkg/webhook`` uses it (``admission.Allowed``, ``Denied``, ``Errored``,
``PatchResponseFromRaw``). A handler takes an ``AdmissionRequest`` and returns an
``AdmissionResponse``; the server wraps it into the review the API server expects.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

Obj = dict[str, Any]


@dataclass(slots=True)
class AdmissionRequest:
    """The ``request`` of an AdmissionReview (admission.k8s.io/v1 or v1beta1)."""

    uid: str
    operation: str
    resource: str
    group: str = ""
    version: str = ""
    kind: str = ""
    sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    object: Obj | None = None
    old_object: Obj | None = None
    user_info: Obj = field(default_factory=dict)
    dry_run: bool = False

    @classmethod
    def from_review(cls, review: Any) -> AdmissionRequest:
        """Raises ValueError when the body is not an AdmissionReview with a request."""
        req = review.get("request") if isinstance(review, dict) else None
        if not isinstance(req, dict):
            raise ValueError("AdmissionReview has no request")
        resource = req.get("resource") or {}
        kind = req.get("kind") or {}
        obj, old = req.get("object"), req.get("oldObject")
        for name, value in (("object", obj), ("oldObject", old)):
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"request.{name} is not an object")
        return cls(uid=str(req.get("uid") or ""), operation=str(req.get("operation") or ""),
                   resource=str(resource.get("resource") or ""),
                   group=str(resource.get("group") or ""),
                   version=str(resource.get("version") or ""), kind=str(kind.get("kind") or ""),
                   sub_resource=str(req.get("subResource") or ""),
                   name=str(req.get("name") or ""), namespace=str(req.get("namespace") or ""),
                   object=obj, old_object=old, user_info=req.get("userInfo") or {},
                   dry_run=bool(req.get("dryRun")))


@dataclass(slots=True)
class AdmissionResponse:
    """What a handler decided: allowed or not, with a Status, optionally a patch, and
    warnings the API server passes to the client (``Warning: 299`` headers; kubectl prints
    them)."""

    allowed: bool
    code: int = 200
    message: str = ""
    reason: str = ""
    patch: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_review(self, uid: str, api_version: str = "admission.k8s.io/v1") -> Obj:
        resp: Obj = {"uid": uid, "allowed": self.allowed}
        if not self.allowed or self.message or self.reason:
            status: Obj = {"code": self.code}
            if self.message:
                status["message"] = self.message
            if self.reason:
                status["reason"] = self.reason
            resp["status"] = status
        if self.patch:
            resp["patchType"] = "JSONPatch"
            resp["patch"] = base64.b64encode(orjson.dumps(self.patch)).decode()
        if self.warnings:
            resp["warnings"] = list(self.warnings)
        return {"apiVersion": api_version, "kind": "AdmissionReview", "response": resp}


Handler = Callable[[AdmissionRequest], AdmissionResponse]


def allowed(message: str = "") -> AdmissionResponse:
    return AdmissionResponse(True, 200, message)


def denied(message: str) -> AdmissionResponse:
    """A plain denial (HTTP 403 in the Status), as ``admission.Denied``."""
    return AdmissionResponse(False, 403, message, "Forbidden")


def errored(code: int, message: str) -> AdmissionResponse:
    """``admission.Errored``: 400 for bad input and rule violations, 500 for failures."""
    return AdmissionResponse(False, code, message)


def patch_response(original: Obj, mutated: Obj) -> AdmissionResponse:
    """Allowed, with the JSON patch from ``original`` to ``mutated`` (none if equal)."""
    return AdmissionResponse(True, 200, patch=create_patch(original, mutated))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def create_patch(original: Any, mutated: Any, path: str = "") -> list[Obj]:
    """RFC 6902 operations turning ``original`` into ``mutated``.

    Objects are compared key by key; lists of equal length element by element, other lists
    are replaced whole (the API server applies either the same way).
    """
    if original == mutated:
        return []
    if isinstance(original, dict) and isinstance(mutated, dict):
        ops: list[Obj] = []
        for key in original:
            if key not in mutated:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in mutated.items():
            sub = f"{path}/{_escape(key)}"
            if key not in original:
                ops.append({"op": "add", "path": sub, "value": copy.deepcopy(value)})
            else:
                ops.extend(create_patch(original[key], value, sub))
        return ops
    if isinstance(original, list) and isinstance(mutated, list) and \
            len(original) == len(mutated):
        ops = []
        for i, (a, b) in enumerate(zip(original, mutated, strict=True)):
            ops.extend(create_patch(a, b, f"{path}/{i}"))
        return ops
    return [{"op": "replace", "path": path or "", "value": copy.deepcopy(mutated)}]


__all__ = ["AdmissionRequest", "AdmissionResponse", "Handler", "allowed", "create_patch",
           "denied", "errored", "patch_response"]
