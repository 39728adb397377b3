"""Authentication: the admin token and ServiceAccount tokens (TokenRequest and token Secrets).

Corresponds to upstream kube-apiserver's bearer-token authenticators
(``k8s.io/apiserver/pkg/authentication/request/bearertoken``, the static admin credential of a
kubeadm kubeconfig, ``pkg/serviceaccount`` for ServiceAccount tokens), the TokenRequest REST
storage (``pkg/registry/core/serviceaccount/storage/token.go``: ``POST
.../serviceaccounts/NAME/token``) and the token controller of kube-controller-manager
(``pkg/controller/serviceaccount/tokens_controller.go``: it fills ``token``, ``ca.crt`` and
``namespace`` of Secrets of type ``kubernetes.io/service-account-token``).

Our tokens are opaque random strings, not JWTs. The server keeps the SHA-256 of each issued
TokenRequest token with its ServiceAccount's uid and expiry in ``<workdir>/serviceaccount-tokens``
so tokens stay valid across restarts; a token Secret's token is its data. A token stops
authenticating when its ServiceAccount (or Secret) is deleted, or the ServiceAccount is
recreated with a new uid.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

import orjson

from . import errors, kubeconfig
from .api import Api, Obj
from .rbac import SA_PREFIX, SYSTEM_MASTERS, Attributes, Authorizer, UserInfo, forbidden
from .resources import ResourceInfo
from .watch import Stored

log = logging.getLogger(__name__)

ADMIN = UserInfo("kubernetes-admin", (SYSTEM_MASTERS, "system:authenticated"))
SA_TOKEN_TYPE = "kubernetes.io/service-account-token"
SA_NAME_ANNOTATION = "kubernetes.io/service-account.name"
SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
# kube-apiserver's --api-audiences defaults to the issuer; this is kind's and kubeadm's.
DEFAULT_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
STATE_FILE = "serviceaccount-tokens"


def service_account_user(namespace: str, name: str) -> UserInfo:
    """The user a ServiceAccount's token authenticates as (``serviceaccount.UserInfo``)."""
    return UserInfo(f"{SA_PREFIX}{namespace}:{name}",
                    ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                     "system:authenticated"))


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """What the server keeps of a TokenRequest token (under its digest)."""

    namespace: str
    name: str
    uid: str
    expires: float  # unix seconds


class Authenticator:
    """Maps bearer tokens to users. ``required`` when the server was given an admin token:
    without one every request is served unauthenticated, as before."""

    def __init__(self, api: Api, admin_token: str | None, state_path: str,
                 ca_pem: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        self.api = api
        self.admin_token = admin_token
        self.state_path = state_path
        self.ca_pem = ca_pem
        self.clock = clock
        self._sa = api.collection(api.info("", "v1", "serviceaccounts"))
        self._secrets = api.collection(api.info("", "v1", "secrets"))
        self._issued: dict[str, IssuedToken] = self._load()
        # digest of a token Secret's token -> (namespace, secret name), and back.
        self._secret_tokens: dict[str, tuple[str, str]] = {}
        self._secret_digest: dict[tuple[str, str], str] = {}
        for st in self._secrets.sorted_items():
            self._index_secret("ADDED", st.obj)
        api.after_write.append(self._on_write)
        api.mutating.append(self._fill_token_secret)

    @property
    def required(self) -> bool:
        return self.admin_token is not None

    # -- authenticating -------------------------------------------------------------------

    def authenticate(self, authorization: str) -> UserInfo:
        """The user of an ``Authorization`` header; 401 Unauthorized for anything else."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        # The scheme is case-insensitive (the in-cluster loader sends "bearer").
        if scheme.lower() != "bearer" or not token:
            raise errors.unauthorized()
        if self.admin_token is not None and secrets.compare_digest(token, self.admin_token):
            return ADMIN
        digest = _digest(token)
        issued = self._issued.get(digest)
        if issued is not None:
            if issued.expires > self.clock() and self._sa_uid(issued.namespace,
                                                               issued.name) == issued.uid:
                return service_account_user(issued.namespace, issued.name)
            raise errors.unauthorized()
        ref = self._secret_tokens.get(digest)
        if ref is not None:
            st = self._secrets.get(*ref)
            ann = (st.obj["metadata"].get("annotations") or {}) if st is not None else {}
            sa = ann.get(SA_NAME_ANNOTATION, "")
            uid = self._sa_uid(ref[0], sa)
            if uid is not None and ann.get(SA_UID_ANNOTATION, uid) == uid:
                return service_account_user(ref[0], sa)
        raise errors.unauthorized()

    def _sa_uid(self, namespace: str, name: str) -> str | None:
        st = self._sa.get(namespace, name)
        return None if st is None else st.obj["metadata"].get("uid")

    # -- TokenRequest ---------------------------------------------------------------------

    def token_request(self, namespace: str, name: str, body: Obj, dry_run: bool) -> Obj:
        """``POST .../serviceaccounts/NAME/token``: a new token for the ServiceAccount."""
        uid = self._sa_uid(namespace, name)
        if uid is None:
            raise errors.not_found("", "serviceaccounts", name)
        spec = body.get("spec")
        if not isinstance(spec, dict):
            spec = {}
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = DEFAULT_EXPIRATION_SECONDS
        why = ""
        if not isinstance(seconds, int):
            why = "must be an integer"
        elif seconds < MIN_EXPIRATION_SECONDS:
            why = "may not specify a duration less than 10 minutes"
        elif seconds > MAX_EXPIRATION_SECONDS:
            why = "may not specify a duration larger than 2^32 seconds"
        if why:
            raise errors.invalid("authentication.k8s.io", "TokenRequest", name, [
                ("FieldValueInvalid", "spec.expirationSeconds",
                 f"Invalid value: {seconds}: {why}")])
        assert isinstance(seconds, int)
        token = secrets.token_hex(32) if not dry_run else ""
        expires = self.clock() + seconds
        if not dry_run:
            self._issued[_digest(token)] = IssuedToken(namespace, name, uid, expires)
            self._save()
        return {
            "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": None},
            "spec": {"audiences": spec.get("audiences") or DEFAULT_AUDIENCES,
                     "expirationSeconds": seconds,
                     "boundObjectRef": spec.get("boundObjectRef")},
            "status": {"token": token,
                       "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                            time.gmtime(expires))},
        }

    def _load(self) -> dict[str, IssuedToken]:
        try:
            with open(self.state_path, "rb") as f:
                raw = orjson.loads(f.read())
        except FileNotFoundError:
            return {}
        except orjson.JSONDecodeError:
            log.warning("%s is unreadable; ServiceAccount tokens issued before this start no "
                        "longer authenticate", self.state_path)
            return {}
        now = self.clock()
        out = {}
        for digest, rec in (raw.items() if isinstance(raw, dict) else ()):
            try:
                t = IssuedToken(**rec)
            except TypeError:
                continue
            if t.expires > now:
                out[digest] = t
        return out

    def _save(self) -> None:
        now = self.clock()
        self._issued = {d: t for d, t in self._issued.items() if t.expires > now}
        kubeconfig.write_private(self.state_path, orjson.dumps(
            {d: asdict(t) for d, t in self._issued.items()}))

    # -- the token controller -------------------------------------------------------------

    async def _fill_token_secret(self, op: str, info: ResourceInfo, new: Obj | None,
                                 old: Obj | None, dry_run: bool, sub: str | None) -> None:
        """Give a ServiceAccount token Secret its token, CA and namespace (kube's token
        controller does so right after the create; we do it as part of it)."""
        if info.storage != ("", "secrets") or new is None or new.get("type") != SA_TOKEN_TYPE:
            return
        md = new.get("metadata") or {}
        ann = md.get("annotations") or {}
        ns = md.get("namespace", "")
        uid = self._sa_uid(ns, ann.get(SA_NAME_ANNOTATION, ""))
        data = new.get("data") or {}
        if uid is None or data.get("token"):
            return
        ann.setdefault(SA_UID_ANNOTATION, uid)
        md["annotations"] = ann

        def b64(v: bytes) -> str:
            return base64.b64encode(v).decode()

        data["token"] = b64(secrets.token_hex(32).encode())
        data["namespace"] = b64(ns.encode())
        if self.ca_pem is not None:
            data["ca.crt"] = b64(self.ca_pem)
        new["data"] = data

    def _index_secret(self, type_: str, obj: Obj) -> None:
        md = obj["metadata"]
        key = (md.get("namespace", ""), md["name"])
        old = self._secret_digest.pop(key, None)
        if old is not None:
            self._secret_tokens.pop(old, None)
        if type_ == "DELETED" or obj.get("type") != SA_TOKEN_TYPE:
            return
        token = (obj.get("data") or {}).get("token")
        if not isinstance(token, str):
            return
        try:
            plain = base64.b64decode(token).decode()
        except (ValueError, UnicodeDecodeError):
            return
        digest = _digest(plain)
        self._secret_tokens[digest] = key
        self._secret_digest[key] = digest

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage == ("", "secrets"):
            self._index_secret(type_, st.obj)
        elif info.storage == ("", "serviceaccounts") and type_ == "DELETED":
            md = st.obj["metadata"]
            ns, name = md.get("namespace", ""), md["name"]
            gone = [d for d, t in self._issued.items() if t.namespace == ns and t.name == name]
            if gone:
                for d in gone:
                    del self._issued[d]
                self._save()
            self._delete_token_secrets(ns, name, md.get("uid", ""))

    def _delete_token_secrets(self, namespace: str, sa: str, uid: str) -> None:
        """The token controller deletes a deleted ServiceAccount's token Secrets (those with
        finalizers are left to their owners; their tokens no longer authenticate anyway)."""
        info = self.api.info("", "v1", "secrets")
        for st in self._secrets.sorted_items(namespace):
            md = st.obj["metadata"]
            ann = md.get("annotations") or {}
            if st.obj.get("type") != SA_TOKEN_TYPE or ann.get(SA_NAME_ANNOTATION) != sa or \
                    ann.get(SA_UID_ANNOTATION, uid) != uid or md.get("finalizers"):
                continue
            self.api._finish_write(info, "DELETED", self.api.storage.delete(self._secrets, st))


def impersonate(authorizer: Authorizer, requestor: UserInfo,
                headers: Iterable[tuple[str, str]]) -> UserInfo:
    """The user ``Impersonate-User`` / ``Impersonate-Group`` headers ask to act as, once
    ``requestor`` may impersonate each (``filters/impersonation.go``); else ``requestor``."""
    name = ""
    groups: list[str] = []
    extras: list[tuple[str, str]] = []
    for key, value in headers:
        k = key.lower()
        if k == "impersonate-user":
            name = value
        elif k == "impersonate-group":
            groups.append(value)
        elif k.startswith("impersonate-extra-"):
            extras.append((k[len("impersonate-extra-"):], value))
    if not name:
        if groups or extras:
            raise errors.internal(f"requested groups {groups} without impersonating a user")
        return requestor
    # Groups given are the whole truth; else a ServiceAccount's own, plus authenticated.
    specified = bool(groups)
    checks: list[Attributes] = []
    ns, _, sa = name[len(SA_PREFIX):].partition(":") if name.startswith(SA_PREFIX) else \
        ("", "", "")
    if ns and sa and ":" not in sa:
        checks.append(Attributes("impersonate", "", True, "", "", "serviceaccounts", "", ns, sa))
        as_user = service_account_user(ns, sa)
        if not specified:
            groups = list(as_user.groups[:2])
    else:
        checks.append(Attributes("impersonate", "", True, "", "", "users", name=name))
    checks += [Attributes("impersonate", "", True, "", "", "groups", name=g) for g in groups]
    checks += [Attributes("impersonate", "", True, "authentication.k8s.io", "", "userextras",
                          key, name=v) for key, v in extras]
    for a in checks:
        ok, reason = authorizer.allowed(requestor, a)
        if not ok:
            raise forbidden(requestor, a, reason)
    if not specified and name != "system:anonymous" and \
            not {"system:authenticated", "system:unauthenticated"} & set(groups):
        groups.append("system:authenticated")
    return UserInfo(name, tuple(groups))


def install(api: Api, workdir: str, admin_token: str | None,
            ca_pem: bytes | None = None) -> Authenticator:
    return Authenticator(api, admin_token, os.path.join(workdir, STATE_FILE), ca_pem)

