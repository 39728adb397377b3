"""RBAC authorization: request attributes, rule evaluation, Forbidden answers, bootstrap policy.

Corresponds to upstream ``k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`` (what a
request asks for: verb, API group, resource, subresource, namespace, name, or a non-resource
path), ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/apis/rbac/v1/evaluation_helpers.go`` (rule
matching; the ``system:masters`` group is always allowed, as kube-apiserver's privileged-group
authorizer does), ``.../endpoints/filters/authorization.go`` with ``responsewriters.Forbidden``
(the 403 Status and its message) and ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy`` (the
ClusterRoles and ClusterRoleBindings kube-apiserver creates at start). Owns the denial counter
``apiserver_authorization_denied_total``, the per-user request counter
``apiserver_user_requests_total`` and the denial log.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import Metric

from . import errors
from .api import Api
from .bootstrap import store_new
from .resources import ResourceInfo
from .watch import Stored

log = logging.getLogger(__name__)

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_STORAGE = {(RBAC_GROUP, p) for p in ("clusterroles", "clusterrolebindings", "roles",
                                          "rolebindings")}
SYSTEM_MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"
# requestinfo.go: subresources of a namespace, not resources inside it.
NAMESPACE_SUBRESOURCES = ("status", "finalize")
METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update",
                "PATCH": "patch", "DELETE": "delete"}


@dataclass(frozen=True, slots=True)
class UserInfo:
    """An authenticated user (``k8s.io/apiserver/pkg/authentication/user.Info``)."""

    name: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attributes:
    """What one request asks to do (``authorizer.Attributes`` from ``RequestInfo``)."""

    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


def _valid_path_segment(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name


def _field_name(selector: str) -> str:
    """The name a field selector requires exactly (``metadata.name=x``), else ''."""
    for term in selector.split(","):
        key, op, value = term.partition("==") if "==" in term else term.partition("=")
        if op and not key.endswith("!") and key.strip() == "metadata.name":
            return value.strip()
    return ""


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """Parse a request as ``RequestInfoFactory.NewRequestInfo`` does."""
    parts = [p for p in path.split("/") if p]
    non_resource = Attributes(verb=method.lower(), path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = METHOD_VERBS.get(method, "")
    if rest[0] == "watch":
        if len(rest) < 2:
            return non_resource
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    sub = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        watch = query.get("watch")
        verb = "watch" if watch is not None and watch.lower() not in ("false", "0") else "list"
        fname = _field_name(query.get("fieldSelector", ""))
        if fname and _valid_path_segment(fname):
            name = fname
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(verb, path, True, group, version, resource, sub, namespace, name)


# -- rules ------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Rule:
    """A PolicyRule, with its lists as sets for matching."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str]
    urls: frozenset[str]

    @classmethod
    def of(cls, rule: Mapping[str, Any]) -> Rule:
        def s(key: str) -> frozenset[str]:
            v = rule.get(key)
            return frozenset(x for x in v if isinstance(x, str)) if isinstance(v, list) \
                else frozenset()

        return cls(s("verbs"), s("apiGroups"), s("resources"), s("resourceNames"),
                   s("nonResourceURLs"))

    def allows(self, a: Attributes) -> bool:
        if "*" not in self.verbs and a.verb not in self.verbs:
            return False
        if not a.resource_request:
            return any(u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u[:-1]))
                       for u in self.urls)
        if "*" not in self.api_groups and a.api_group not in self.api_groups:
            return False
        if not self._resource_matches(a.resource, a.subresource):
            return False
        return not self.resource_names or a.name in self.resource_names

    def _resource_matches(self, resource: str, sub: str) -> bool:
        res = self.resources
        if "*" in res:
            return True
        if not sub:
            return resource in res
        return f"{resource}/{sub}" in res or f"*/{sub}" in res or f"{resource}/*" in res


@dataclass(slots=True)
class _Grants:
    """The rules one user holds at one scope, and the bindings whose role is missing."""

    rules: list[Rule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _subject_keys(binding: Mapping[str, Any], namespace: str) -> Iterable[str]:
    """The users and groups a binding applies to (``appliesTo``), as 'u:NAME' / 'g:NAME'."""
    for s in binding.get("subjects") or ():
        if not isinstance(s, dict):
            continue
        kind, name = s.get("kind"), s.get("name", "")
        if kind == "User":
            yield "u:" + name
        elif kind == "Group":
            yield "g:" + name
        elif kind == "ServiceAccount":
            yield f"u:{SA_PREFIX}{s.get('namespace') or namespace}:{name}"


class Authorizer:
    """RBAC over the server's own Roles and bindings. Bindings are indexed by subject (kept
    up to date write by write); each user's rules are cached until any RBAC object changes."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._roles = api.collection(api.info(RBAC_GROUP, "v1", "roles"))
        self._cluster_roles = api.collection(api.info(RBAC_GROUP, "v1", "clusterroles"))
        # namespace ('' for ClusterRoleBindings) -> subject key -> binding name -> binding
        self._index: dict[str, dict[str, dict[str, Stored]]] = {}
        self._keys: dict[tuple[str, str], tuple[str, ...]] = {}  # (namespace, name) -> keys
        for plural in ("clusterrolebindings", "rolebindings"):
            for st in api.collection(api.info(RBAC_GROUP, "v1", plural)).sorted_items():
                self._reindex(st, deleted=False)
        self._cache: dict[tuple[str, tuple[str, ...], str], _Grants] = {}
        self._logged: set[tuple[str, str, str, str]] = set()
        self.registry = CollectorRegistry(auto_describe=True)
        self.denied = Counter(
            "apiserver_authorization_denied_total",
            "Requests answered 403 Forbidden by authorization, by user, verb, API group and "
            "resource (resource/subresource, or the path of a non-resource request).",
            ("user", "verb", "group", "resource"), registry=self.registry)
        # kube's authenticated_user_requests buckets every ServiceAccount as "other"; this one
        # keeps the name, to tell which identity a component ran as.
        self.requests = Counter(
            "apiserver_user_requests_total",
            "Requests checked by authorization (allowed or denied), by user.",
            ("user",), registry=self.registry)
        self._request_counters: dict[str, Counter] = {}  # user -> its child: one dict hit a request
        api.after_write.append(self._on_write)

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage not in RBAC_STORAGE:
            return
        if info.plural.endswith("bindings"):
            self._reindex(st, deleted=type_ == "DELETED")
        self._cache.clear()

    def _reindex(self, st: Stored, deleted: bool) -> None:
        md = st.obj["metadata"]
        ns, name = md.get("namespace") or "", md["name"]
        index = self._index.setdefault(ns, {})
        for key in self._keys.pop((ns, name), ()):
            index[key].pop(name, None)
        if deleted:
            return
        keys = tuple(set(_subject_keys(st.obj, ns)))
        for key in keys:
            index.setdefault(key, {})[name] = st
        self._keys[(ns, name)] = keys

    def _grants(self, user: UserInfo, namespace: str) -> _Grants:
        """The rules ``user`` holds cluster-wide ('') or from bindings in ``namespace``."""
        ck = (user.name, user.groups, namespace)
        g = self._cache.get(ck)
        if g is not None:
            return g
        index = self._index.get(namespace, {})
        g = _Grants()
        seen: set[str] = set()
        for key in ("u:" + user.name, *("g:" + grp for grp in user.groups)):
            for name, st in index.get(key, {}).items():
                if name not in seen:
                    seen.add(name)
                    self._add_role(g, st.obj.get("roleRef") or {}, namespace)
        self._cache[ck] = g
        return g

    def _add_role(self, g: _Grants, ref: Mapping[str, Any], namespace: str) -> None:
        name = ref.get("name", "")
        if ref.get("kind") == "Role" and namespace:
            st = self._roles.get(namespace, name)
            what = "role"
        else:
            st = self._cluster_roles.get(None, name)
            what = "clusterrole"
        if st is None:
            g.errors.append(f'{what}.{RBAC_GROUP} "{name}" not found')
            return
        g.rules.extend(Rule.of(r) for r in st.obj.get("rules") or () if isinstance(r, dict))

    def allowed(self, user: UserInfo, a: Attributes) -> tuple[bool, str]:
        """Whether RBAC allows the request, and why not (``RBAC: ...``, or '')."""
        if SYSTEM_MASTERS in user.groups:
            return True, ""
        errs: list[str] = []
        for scope in ("", a.namespace) if a.namespace else ("",):
            g = self._grants(user, scope)
            if any(r.allows(a) for r in g.rules):
                return True, ""
            errs.extend(e for e in g.errors if e not in errs)
        if not errs:
            return False, ""
        return False, "RBAC: " + (errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]")

    def rules_for(self, user: UserInfo, namespace: str) -> list[Rule]:
        """Every rule ``user`` holds in ``namespace`` (SelfSubjectRulesReview)."""
        if SYSTEM_MASTERS in user.groups:
            return [Rule.of({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}),
                    Rule.of({"verbs": ["*"], "nonResourceURLs": ["*"]})]
        rules = list(self._grants(user, "").rules)
        if namespace:
            rules += self._grants(user, namespace).rules
        return rules

    def check(self, user: UserInfo, a: Attributes) -> None:
        """Raise the 403 kube-apiserver answers unless ``user`` may do ``a``."""
        counter = self._request_counters.get(user.name)
        if counter is None:
            counter = self._request_counters[user.name] = self.requests.labels(user.name)
        counter.inc()
        ok, reason = self.allowed(user, a)
        if ok:
            return
        e = forbidden(user, a, reason)
        res = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        label = res if a.resource_request else a.path
        self.denied.labels(user.name, a.verb, a.api_group, label).inc()
        key = (user.name, a.verb, a.api_group, label)
        if key not in self._logged:
            self._logged.add(key)
            log.warning("authorization denied: %s", e.message)
        raise e


DENIED_METRIC = "apiserver_authorization_denied_total"


@dataclass(frozen=True, slots=True)
class Denial:
    """Requests of one user the server denied (403) for one verb and resource: a row of
    ``apiserver_authorization_denied_total``."""

    user: str
    verb: str
    group: str
    resource: str  # resource/subresource, or the path of a non-resource request
    count: int


def denials(families: Iterable[Metric]) -> list[Denial]:
    """The denial rows of metric families, most denied first: the ``Authorizer.denied``
    counter's own ``collect()`` in process, or ``/metrics`` text parsed with
    ``prometheus_client.parser.text_string_to_metric_families``."""
    rows = [Denial(s.labels["user"], s.labels["verb"], s.labels["group"], s.labels["resource"],
                   int(s.value))
            for family in families for s in family.samples
            if s.name == DENIED_METRIC and s.value > 0]
    rows.sort(key=lambda r: (-r.count, r.user, r.verb, r.resource))
    return rows


def forbidden(user: UserInfo, a: Attributes, reason: str = "") -> errors.ApiError:
    """``responsewriters.Forbidden``: the message of ``forbiddenMessage`` in a NewForbidden."""
    if not a.resource_request:
        msg = f'User "{user.name}" cannot {a.verb} path "{a.path}"'
    else:
        res = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
        msg = (f'User "{user.name}" cannot {a.verb} resource "{res}" in API group '
               f'"{a.api_group}" {where}')
    if reason:
        msg = f"{msg}: {reason}"
    if not a.resource_request or not a.resource:
        return errors.ApiError(403, "Forbidden", f"forbidden: {msg}", {})
    q = f"{a.resource}.{a.api_group}" if a.api_group else a.resource
    details: dict[str, Any] = {}
    if a.name:
        details["name"] = a.name
    if a.api_group:
        details["group"] = a.api_group
    details["kind"] = a.resource
    text = f'{q} "{a.name}" is forbidden: {msg}' if a.name else f"{q} is forbidden: {msg}"
    return errors.ApiError(403, "Forbidden", text, details)


# -- bootstrap policy -------------------------------------------------------------------------

READ = ("get", "list", "watch")


def _r(groups: tuple[str, ...], resources: tuple[str, ...], verbs: tuple[str, ...],
       names: tuple[str, ...] = ()) -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": list(groups)}
    if names:
        rule["resourceNames"] = list(names)
    rule["resources"] = list(resources)
    rule["verbs"] = list(verbs)
    return rule


def _urls(urls: tuple[str, ...], verbs: tuple[str, ...] = ("get",)) -> dict[str, Any]:
    return {"nonResourceURLs": list(urls), "verbs": list(verbs)}


# bootstrappolicy/testdata/cluster-roles.yaml (Kubernetes 1.30), the roles our components and
# kubectl need.
BOOTSTRAP_CLUSTER_ROLES: dict[str, list[dict[str, Any]]] = {
    "cluster-admin": [_r(("*",), ("*",), ("*",)), _urls(("*",), ("*",))],
    "system:discovery": [_urls(("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                                "/openapi", "/openapi/*", "/readyz", "/version", "/version/"))],
    "system:basic-user": [
        _r(("authorization.k8s.io",), ("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
           ("create",)),
        _r(("authentication.k8s.io",), ("selfsubjectreviews",), ("create",)),
    ],
    "system:public-info-viewer": [_urls(("/healthz", "/livez", "/readyz", "/version",
                                         "/version/"))],
    "system:kube-scheduler": [
        _r(("", "events.k8s.io"), ("events",), ("create", "patch", "update")),
        _r(("coordination.k8s.io",), ("leases",), ("create",)),
        _r(("coordination.k8s.io",), ("leases",), ("get", "update"), ("kube-scheduler",)),
        _r(("",), ("nodes",), READ),
        _r(("",), ("pods",), ("delete", *READ)),
        _r(("",), ("bindings", "pods/binding"), ("create",)),
        _r(("",), ("pods/status",), ("patch", "update")),
        _r(("",), ("replicationcontrollers", "services"), READ),
        _r(("apps", "extensions"), ("replicasets",), READ),
        _r(("apps",), ("statefulsets",), READ),
        _r(("policy",), ("poddisruptionbudgets",), READ),
        _r(("",), ("persistentvolumeclaims", "persistentvolumes"), READ),
        _r(("authentication.k8s.io",), ("tokenreviews",), ("create",)),
        _r(("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)),
        _r(("storage.k8s.io",), ("csinodes",), READ),
        _r(("",), ("namespaces",), READ),
        _r(("storage.k8s.io",), ("csidrivers",), READ),
        _r(("storage.k8s.io",), ("csistoragecapacities",), READ),
    ],
    "system:volume-scheduler": [
        _r(("",), ("persistentvolumes",), ("get", "list", "patch", "update", "watch")),
        _r(("storage.k8s.io",), ("storageclasses",), READ),
        _r(("",), ("persistentvolumeclaims",), ("get", "list", "patch", "update", "watch")),
    ],
}
# bootstrappolicy/testdata/cluster-role-bindings.yaml: binding name (= role) -> subjects.
BOOTSTRAP_CLUSTER_ROLE_BINDINGS: dict[str, list[tuple[str, str]]] = {
    "cluster-admin": [("Group", SYSTEM_MASTERS)],
    "system:basic-user": [("Group", "system:authenticated")],
    "system:discovery": [("Group", "system:authenticated")],
    "system:public-info-viewer": [("Group", "system:authenticated"),
                                  ("Group", "system:unauthenticated")],
    "system:kube-scheduler": [("User", "system:kube-scheduler")],
    "system:volume-scheduler": [("User", "system:kube-scheduler")],
}


def _bootstrap_meta(name: str) -> dict[str, Any]:
    return {"name": name,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}


def install_bootstrap_policy(api: Api) -> None:
    """Create the bootstrap ClusterRoles and ClusterRoleBindings that are missing (a restart
    keeps what users changed)."""
    cr = api.info(RBAC_GROUP, "v1", "clusterroles")
    crb = api.info(RBAC_GROUP, "v1", "clusterrolebindings")
    for name, rules in BOOTSTRAP_CLUSTER_ROLES.items():
        store_new(api, cr, {"metadata": _bootstrap_meta(name), "rules": rules})
    for name, subjects in BOOTSTRAP_CLUSTER_ROLE_BINDINGS.items():
        store_new(api, crb, {
            "metadata": _bootstrap_meta(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": k, "name": n} for k, n in subjects],
        })
