"""Access and identity reviews: asking the server what a user may do, and who one is.

Corresponds to upstream ``pkg/registry/authorization/selfsubjectaccessreview``,
``.../subjectaccessreview`` and ``.../localsubjectaccessreview`` (``kubectl auth can-i``: the
authorizer's answer for attributes given in the body, never stored),
``.../selfsubjectrulesreview`` (``kubectl auth can-i --list``) and
``pkg/registry/authentication/selfsubjectreview`` (``kubectl auth whoami``).
"""

from __future__ import annotations

from typing import Any

from . import errors
from .api import Obj
from .rbac import Attributes, Authorizer, UserInfo

AUTHORIZATION = "authorization.k8s.io"
ACCESS_REVIEWS = {"selfsubjectaccessreviews": "SelfSubjectAccessReview",
                  "subjectaccessreviews": "SubjectAccessReview",
                  "localsubjectaccessreviews": "LocalSubjectAccessReview"}


def _str(d: Any, key: str) -> str:
    v = d.get(key) if isinstance(d, dict) else None
    return v if isinstance(v, str) else ""


def _attributes(kind: str, spec: Obj) -> Attributes:
    ra, nra = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (ra is None) == (nra is None):
        raise errors.invalid(AUTHORIZATION, kind, "", [
            ("FieldValueInvalid", "spec.resourceAttributes",
             "Invalid value: \"null\": exactly one of nonResourceAttributes or "
             "resourceAttributes must be specified")])
    if nra is not None:
        return Attributes(_str(nra, "verb"), _str(nra, "path"))
    return Attributes(_str(ra, "verb"), "", True, _str(ra, "group"), _str(ra, "version"),
                      _str(ra, "resource"), _str(ra, "subresource"), _str(ra, "namespace"),
                      _str(ra, "name"))


def access_review(authorizer: Authorizer, requester: UserInfo, plural: str,
                  namespace: str | None, body: Obj) -> Obj:
    """The review of ``body`` with its status filled in (201 Created in kube)."""
    kind = ACCESS_REVIEWS[plural]
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    if plural == "selfsubjectaccessreviews":
        user = requester
    else:
        groups = spec.get("groups") or []
        user = UserInfo(_str(spec, "user"), tuple(g for g in groups if isinstance(g, str)))
        if not user.name and not user.groups:
            raise errors.invalid(AUTHORIZATION, kind, "", [
                ("FieldValueInvalid", "spec.user",
                 'Invalid value: "": at least one of user or group must be specified')])
    if plural == "localsubjectaccessreviews":
        ra = spec.get("resourceAttributes")
        if isinstance(ra, dict):
            ra.setdefault("namespace", namespace or "")
    allowed, reason = authorizer.allowed(user, _attributes(kind, spec))
    status: Obj = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    md = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    return {"kind": kind, "apiVersion": f"{AUTHORIZATION}/v1",
            "metadata": {**(md or {}), "creationTimestamp": None}, "spec": spec,
            "status": status}


def rules_review(authorizer: Authorizer, user: UserInfo, body: Obj) -> Obj:
    """SelfSubjectRulesReview: the rules ``user`` holds in ``spec.namespace``."""
    spec = body.get("spec")
    ns = _str(spec, "namespace")
    resource, non_resource = [], []
    for r in authorizer.rules_for(user, ns):
        if r.urls:
            non_resource.append({"verbs": sorted(r.verbs), "nonResourceURLs": sorted(r.urls)})
        else:
            rule: Obj = {"verbs": sorted(r.verbs), "apiGroups": sorted(r.api_groups),
                         "resources": sorted(r.resources)}
            if r.resource_names:
                rule["resourceNames"] = sorted(r.resource_names)
            resource.append(rule)
    return {"kind": "SelfSubjectRulesReview", "apiVersion": f"{AUTHORIZATION}/v1",
            "metadata": {"creationTimestamp": None}, "spec": {"namespace": ns},
            "status": {"resourceRules": resource, "nonResourceRules": non_resource,
                       "incomplete": False}}


def self_subject_review(user: UserInfo) -> Obj:
    return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "status": {"userInfo": {"username": user.name, "groups": list(user.groups)}}}
