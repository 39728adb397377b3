"""HTTP handling: routing REST paths to the API, content negotiation and streaming watches.

Corresponds to upstream ``k8s.io/apiserver/pkg/endpoints/handlers`` (get, list, create,
update, patch, delete, deletecollection, watch), ``.../endpoints/handlers/responsewriters``
(Status errors) and the Table / PartialObjectMetadata transforms of ``handlers/response.go``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from . import admission, discovery, errors, openapi, rbac, reviews, subresources, tables
from . import body as bodies
from .api import APPLY_PATCH, JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, Api
from .authn import ADMIN, Authenticator, impersonate
from .resources import ResourceInfo
from .watch import Stored, Watcher

JSON = "application/json"
TABLE_V1 = "application/json;as=Table;v=v1;g=meta.k8s.io"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
# The kinds that subresources' request bodies must be (named in decoding errors).
# Who sent the request, once authenticated (and impersonated).
USER = web.RequestKey("user", rbac.UserInfo)
SUBRESOURCE_KINDS = {"binding": "Binding", "eviction": "Eviction", "scale": "Scale",
                     "token": "TokenRequest"}


def _truthy(v: str | None) -> bool:
    return v is not None and v.lower() in ("1", "true", "t", "yes")


def _json(obj: Any, status: int = 200, content_type: str = JSON,
          headers: dict[str, str] | None = None) -> web.Response:
    return _raw(orjson.dumps(obj), status, content_type, headers)


def _raw(body: bytes, status: int = 200, content_type: str = JSON,
         headers: dict[str, str] | None = None) -> web.Response:
    h = {"Content-Type": content_type, "Cache-Control": "no-cache, private"}
    if headers:
        h.update(headers)
    return web.Response(body=body, status=status, headers=h)


def error_response(e: errors.ApiError) -> web.Response:
    return _json(e.status(), e.code, headers=e.headers)


def _negotiate(accept: str) -> str:
    """One of JSON, TABLE_V1, TABLE_V1BETA1, PARTIAL(_LIST) for the request's Accept header."""
    for part in accept.split(","):
        p = part.replace(" ", "")
        if "as=Table" in p:
            return TABLE_V1BETA1 if "v=v1beta1" in p else TABLE_V1
        if "as=PartialObjectMetadataList" in p:
            return PARTIAL_LIST
        if "as=PartialObjectMetadata" in p:
            return PARTIAL
        media = p.split(";", 1)[0]
        if media in ("application/json", "application/*", "*/*", ""):
            return JSON
        if media in ("application/yaml",):
            return JSON
    if "application/vnd.kubernetes.protobuf" in accept and "json" not in accept:
        raise errors.ApiError(406, "NotAcceptable",
                              "only the following media types are accepted: application/json")
    return JSON


def _int_param(q: Any, name: str) -> int:
    """An integer query parameter; 400 naming it otherwise (as the parameter codec does)."""
    v = q[name]
    try:
        return int(v)
    except ValueError:
        raise errors.bad_request(f'invalid value for {name}: strconv.ParseInt: parsing "{v}": '
                                 "invalid syntax") from None


class Handlers:
    """The aiohttp request handlers, bound to one Api."""

    def __init__(self, api: Api, authenticator: Authenticator, authorizer: rbac.Authorizer,
                 address: str = "127.0.0.1:0", bookmark_interval: float = 5.0) -> None:
        self.api = api
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.address = address
        self.bookmark_interval = bookmark_interval
        self.watchers: set[Watcher] = set()
        self.ready = True

    # -- entry point ------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        warnings = admission.collect_warnings()
        resp = await self._handle(request)
        if warnings and not resp.prepared:
            for text in warnings:
                resp.headers.add("Warning", admission.warning_header(text))
        return resp

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            path = request.path
            # Health and version are public (system:public-info-viewer binds them for
            # system:unauthenticated too); everything else needs a user RBAC allows. Without
            # authentication every request is the admin's.
            if not path.startswith(HEALTH_PATHS) and path != "/version":
                required = self.authenticator.required
                user = self.authenticator.authenticate(
                    request.headers.get("Authorization", "")) if required else ADMIN
                user = impersonate(self.authorizer, user, request.headers.items())
                if required:
                    self.authorizer.check(user, rbac.request_attributes(request.method, path,
                                                                        request.query))
                request[USER] = user
            return await self._route(request, path)
        except errors.ApiError as e:
            return error_response(e)
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as e:  # noqa: BLE001 - answer 500 like the apiserver, keep serving
            import traceback

            traceback.print_exc()
            return error_response(errors.internal(repr(e)))

    async def _route(self, request: web.Request, path: str) -> web.StreamResponse:
        segs = [s for s in path.split("/") if s]
        if not segs:
            return _json({"paths": ["/api", "/api/v1", "/apis", "/healthz", "/livez",
                                    "/openapi/v2", "/openapi/v3", "/readyz", "/version"]})
        head = segs[0]
        if head in ("healthz", "livez", "readyz"):
            if head == "readyz" and not self.ready:
                return web.Response(text="[-]ready failed", status=500)
            return web.Response(text="ok", content_type="text/plain")
        if head == "version":
            return _json(discovery.KUBE_VERSION)
        if head == "metrics" and len(segs) == 1:
            return web.Response(body=generate_latest(self.authorizer.registry),
                                headers={"Content-Type": CONTENT_TYPE_LATEST})
        if head == "openapi":
            return openapi.serve(self.api.registry, segs[1:], request)
        if head == "api":
            if len(segs) == 1:
                return self._discovery(request, True)
            if segs[1] != "v1":
                raise errors.not_found_path(path)
            if len(segs) == 2:
                return _json(discovery.resource_list(self.api.registry, "", "v1"))
            return await self._resource(request, "", "v1", segs[2:])
        if head == "apis":
            reg = self.api.registry
            if len(segs) == 1:
                return self._discovery(request, False)
            group = segs[1]
            if len(segs) == 2:
                g = discovery.api_group(reg, group)
                if g is None:
                    raise errors.not_found_path(path)
                return _json(g)
            version = segs[2]
            if not reg.has_group_version(group, version):
                raise errors.not_found_path(path)
            if len(segs) == 3:
                return _json(discovery.resource_list(reg, group, version))
            return await self._resource(request, group, version, segs[3:])
        raise errors.not_found_path(path)

    def _discovery(self, request: web.Request, legacy: bool) -> web.Response:
        media = discovery.wants_aggregated(request.headers.get("Accept", ""))
        if media is not None:
            return _json(discovery.aggregated(self.api.registry, legacy, media),
                         content_type=media)
        if legacy:
            return _json(discovery.api_versions(self.address))
        return _json(discovery.api_group_list(self.api.registry))

    # -- resources --------------------------------------------------------------------------

    async def _resource(self, request: web.Request, group: str, version: str,
                        rest: list[str]) -> web.StreamResponse:
        legacy_watch = False
        if rest and rest[0] == "watch":
            legacy_watch = True
            rest = rest[1:]
        ns: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces" and not (
                len(rest) == 3 and rest[2] in ("status", "finalize")):
            ns = rest[1]
            rest = rest[2:]
        if not rest or len(rest) > 3:
            raise errors.not_found_path(request.path)
        info = self.api.registry.get(group, version, rest[0])
        if info is None or (ns is not None and not info.namespaced):
            raise errors.not_found_path(request.path)
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and sub not in info.subresources:
            raise errors.not_found_path(request.path)
        q = request.query
        method = request.method
        dry_run = bool(q.get("dryRun"))
        if info.namespaced and ns is None and name is not None:
            raise errors.not_found_path(request.path)

        if method == "GET":
            if legacy_watch or _truthy(q.get("watch")):
                if name is not None:
                    fs = f"metadata.name={name}"
                    field = q.get("fieldSelector")
                    return await self._watch(request, info, ns,
                                             f"{field},{fs}" if field else fs)
                return await self._watch(request, info, ns, q.get("fieldSelector"))
            if name is None:
                return self._list(request, info, ns)
            if sub == "log":
                self.api.get(info, ns, name)
                return web.Response(text="", content_type="text/plain")
            st = self.api.get(info, ns, name)
            if sub == "scale":
                return _json(subresources.scale_of(info, self.api.view(info, st)))
            return self._object(request, info, st)
        if method == "POST":
            body = await self._body(request, info.group if not sub else "",
                                    SUBRESOURCE_KINDS.get(sub or "", info.kind))
            if info.plural == "bindings" and info.group == "":
                md = body.get("metadata")
                bname = md.get("name", "") if isinstance(md, dict) else ""
                return _json(await subresources.bind(self.api, ns or "", bname, body, dry_run),
                             201)
            if sub == "binding":
                return _json(await subresources.bind(self.api, ns or "", name or "", body,
                                                     dry_run), 201)
            if sub == "eviction":
                return _json(await subresources.evict(self.api, ns or "", name or "", body,
                                                       dry_run), 201)
            if sub == "token":
                return _json(self.authenticator.token_request(ns or "", name or "", body,
                                                              dry_run), 201)
            if name is not None or "create" not in info.verbs:
                raise errors.method_not_allowed("POST", request.path)
            if info.plural in reviews.ACCESS_REVIEWS and info.group == reviews.AUTHORIZATION:
                return _json(reviews.access_review(self.authorizer, self._user(request),
                                                   info.plural, ns, body), 201)
            if info.plural == "selfsubjectrulesreviews":
                return _json(reviews.rules_review(self.authorizer, self._user(request), body),
                             201)
            if info.plural == "selfsubjectreviews":
                return _json(reviews.self_subject_review(self._user(request)), 201)
            st = await self.api.create(info, ns, body, dry_run=dry_run,
                                       **self._validation(request))
            return self._object(request, info, st, 201)
        if method == "PUT":
            if name is None:
                raise errors.method_not_allowed("PUT", request.path)
            body = await self._body(request, info.group if not sub else "",
                                    SUBRESOURCE_KINDS.get(sub or "", info.kind))
            if sub == "scale":
                return _json(await subresources.update_scale(self.api, info, ns, name, body,
                                                             dry_run))
            if sub == "finalize":
                sub = None
                st = await self._finalize(info, name, body)
                return self._object(request, info, st)
            st = await self.api.update(info, ns, name, body, subresource=sub, dry_run=dry_run,
                                       **self._validation(request))
            return self._object(request, info, st)
        if method == "PATCH":
            if name is None:
                raise errors.method_not_allowed("PATCH", request.path)
            ctype = request.headers.get("Content-Type", "").split(";")[0].strip()
            if ctype not in PATCH_TYPES:
                raise errors.unsupported_media_type(ctype)
            raw = await bodies.read(request)
            if sub == "scale":
                return await self._patch_scale(info, ns, name, ctype, raw, dry_run)
            st = await self.api.patch(info, ns, name, ctype, raw, subresource=sub,
                                      dry_run=dry_run, **self._validation(request))
            return self._object(request, info, st)
        if method == "DELETE":
            raw = await bodies.read(request)
            options: dict[str, Any] = {}
            if raw.strip():
                options = bodies.decode_object(raw, JSON, "", "DeleteOptions")
            if "gracePeriodSeconds" in q:
                options["gracePeriodSeconds"] = _int_param(q, "gracePeriodSeconds")
            if "propagationPolicy" in q:
                options["propagationPolicy"] = q["propagationPolicy"]
            if name is None:
                if "deletecollection" not in info.verbs:
                    raise errors.method_not_allowed("DELETE", request.path)
                deleted = await self.api.delete_collection(
                    info, ns, q.get("labelSelector"), q.get("fieldSelector"), options,
                    dry_run=dry_run)
                return self._list_body(request, info, deleted, self.api.storage.rv, "", None)
            st = await self.api.delete(info, ns, name, options, dry_run=dry_run)
            return self._object(request, info, st)
        raise errors.method_not_allowed(method, request.path)

    @staticmethod
    def _user(request: web.Request) -> rbac.UserInfo:
        """Who sent the request; without authentication, the admin (everything is allowed)."""
        return request.get(USER, ADMIN)

    def _validation(self, request: web.Request) -> dict[str, Any]:
        mode = request.query.get("fieldValidation", "")
        return {"field_validation": mode} if mode else {}

    async def _body(self, request: web.Request, group: str, kind: str) -> dict[str, Any]:
        ctype = request.headers.get("Content-Type", JSON).split(";")[0].strip().lower()
        return bodies.decode_object(await bodies.read(request), ctype, group, kind)

    async def _finalize(self, info: ResourceInfo, name: str, body: Any) -> Stored:
        """PUT namespaces/<name>/finalize: replace spec.finalizers only."""
        st = self.api.get(info, None, name)
        new = st.copy()
        new.setdefault("spec", {})["finalizers"] = ((body or {}).get("spec") or {}).get(
            "finalizers") or []
        coll = self.api.collection(info)
        out = self.api.storage.update(coll, new, st)
        self.api._finish_write(info, "MODIFIED", out)
        return out

    async def _patch_scale(self, info: ResourceInfo, ns: str | None, name: str, ctype: str,
                           raw: bytes, dry_run: bool) -> web.Response:
        from .patch import PatchError, json_patch, merge_patch

        st = self.api.get(info, ns, name)
        scale = subresources.scale_of(info, self.api.view(info, st))
        p = bodies.decode_json(raw, "error decoding patch")
        try:
            scale = json_patch(scale, p) if ctype == JSON_PATCH else merge_patch(scale, p)
        except PatchError as e:
            raise errors.ApiError(422, "Invalid", str(e)) from None
        return _json(await subresources.update_scale(self.api, info, ns, name, scale, dry_run))

    # -- responses --------------------------------------------------------------------------

    def _object(self, request: web.Request, info: ResourceInfo, st: Stored,
                status: int = 200) -> web.Response:
        media = _negotiate(request.headers.get("Accept", JSON))
        if media in (TABLE_V1, TABLE_V1BETA1):
            t = tables.table(info, [self.api.view(info, st)],
                             request.query.get("includeObject", "PartialObjectMetadata"),
                             {"resourceVersion": st.obj["metadata"].get("resourceVersion", "")})
            if media == TABLE_V1BETA1:
                t["apiVersion"] = "meta.k8s.io/v1beta1"
            return _json(t, status, media)
        if media == PARTIAL:
            return _json(tables.partial_metadata(self.api.view(info, st)), status, media)
        return _raw(self.api.encode(info, st), status)

    def _list(self, request: web.Request, info: ResourceInfo, ns: str | None) -> web.Response:
        q = request.query
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise errors.bad_request("limit must be an integer") from None
        res = self.api.list(info, ns, q.get("labelSelector"), q.get("fieldSelector"), limit,
                            q.get("continue"))
        return self._list_body(request, info, res.items, res.rv, res.cont, res.remaining)

    def _list_body(self, request: web.Request, info: ResourceInfo, items: list[Stored], rv: int,
                   cont: str, remaining: int | None) -> web.Response:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if cont:
            meta["continue"] = cont
        if remaining is not None:
            meta["remainingItemCount"] = remaining
        media = _negotiate(request.headers.get("Accept", JSON))
        if media in (TABLE_V1, TABLE_V1BETA1):
            t = tables.table(info, [self.api.view(info, st) for st in items],
                             request.query.get("includeObject", "PartialObjectMetadata"), meta)
            if media == TABLE_V1BETA1:
                t["apiVersion"] = "meta.k8s.io/v1beta1"
            return _json(t, 200, media)
        if media in (PARTIAL_LIST, PARTIAL):
            return _json({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                          "metadata": meta,
                          "items": [tables.partial_metadata(self.api.view(info, st))
                                    for st in items]}, 200, PARTIAL_LIST)
        head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.api_version,
                             "metadata": meta})
        enc = self.api.encode
        body = b"".join((head[:-1], b',"items":[', b",".join(enc(info, st) for st in items),
                         b"]}"))
        return _raw(body)

    # -- watch ------------------------------------------------------------------------------

    async def _watch(self, request: web.Request, info: ResourceInfo, ns: str | None,
                     field_selector: str | None) -> web.StreamResponse:
        q = request.query
        media = _negotiate(request.headers.get("Accept", JSON))
        encoder = None
        if media in (TABLE_V1, TABLE_V1BETA1):
            include = q.get("includeObject", "PartialObjectMetadata")
            first = [True]

            def encoder(t: str, st: Stored) -> bytes:
                tb = tables.table(info, [self.api.view(info, st)], include,
                                  {"resourceVersion": st.obj["metadata"]["resourceVersion"]},
                                  with_columns=first[0])
                first[0] = False
                if media == TABLE_V1BETA1:
                    tb["apiVersion"] = "meta.k8s.io/v1beta1"
                return orjson.dumps({"type": t, "object": tb}) + b"\n"
        elif media in (PARTIAL, PARTIAL_LIST):
            def encoder(t: str, st: Stored) -> bytes:
                return orjson.dumps({"type": t, "object": tables.partial_metadata(
                    self.api.view(info, st))}) + b"\n"
        sie = q.get("sendInitialEvents")
        w = self.api.watch(
            info, ns, label_selector=q.get("labelSelector"), field_selector=field_selector,
            resource_version=q.get("resourceVersion", ""),
            bookmarks=_truthy(q.get("allowWatchBookmarks")),
            send_initial_events=None if sie is None else _truthy(sie), encoder=encoder)
        timeout = _int_param(q, "timeoutSeconds") if q.get("timeoutSeconds") else 1800
        resp = web.StreamResponse(status=200, headers={
            "Content-Type": JSON if media == JSON else media,
            "Cache-Control": "no-cache, private",
            "Transfer-Encoding": "chunked",
        })
        await resp.prepare(request)
        self.watchers.add(w)
        deadline = time.monotonic() + timeout
        try:
            while True:
                if w.buf:
                    await resp.write(b"".join(w.take()))
                    continue
                if w.closed:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    await asyncio.wait_for(w.wake.wait(),
                                           min(left, self.bookmark_interval))
                except TimeoutError:
                    if w.bookmarks and not w.buf and time.monotonic() < deadline:
                        w.push(self.api.bookmark(info, self.api.storage.rv))
                if request.transport is None or request.transport.is_closing():
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.watchers.discard(w)
            w.close()
        try:
            await resp.write_eof()
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    def close_watchers(self) -> None:
        for w in list(self.watchers):
            w.close()
