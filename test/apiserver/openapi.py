"""A minimal OpenAPI v3 (and v2) document, enough for kubectl.

kubectl's default ``--validate=strict`` asks the server, through ``/openapi/v3``, whether the
PATCH operation of the object's kind takes the ``fieldValidation`` query parameter; when it does,
kubectl leaves validation to the server and sends ``fieldValidation=Strict`` (which this server
honours for custom resources, whose schemas it knows). So each group-version document lists,
for every resource, the PATCH operation with its ``x-kubernetes-group-version-kind`` and the
``fieldValidation`` parameter, and nothing else: no schemas. Without schemas kubectl falls back
to its compiled-in types for strategic merge patches (apply, label, annotate), as it does for
old servers. ``/openapi/v2`` is read by kubectl only when v3 is missing, or to validate a
``kind: List`` on the client side; for that it gets an empty document (an empty protobuf
``openapi_v2.Document``, or ``{"swagger": "2.0"}`` for JSON clients), in which kubectl finds no
schema and so skips client-side validation.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from aiohttp import web

from . import errors
from .registry import Registry
from .resources import ResourceInfo

_FIELD_VALIDATION = {"name": "fieldValidation", "in": "query", "schema": {
    "type": "string", "uniqueItems": True},
    "description": "fieldValidation instructs the server on how to handle objects in the "
                   "request containing unknown or duplicate fields."}


def _gv_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _ops(info: ResourceInfo) -> dict[str, Any]:
    gvk = {"group": info.group, "version": info.version, "kind": info.kind}
    base = f"/{_gv_key(info.group, info.version)}"
    if info.namespaced:
        item = f"{base}/namespaces/{{namespace}}/{info.plural}/{{name}}"
    else:
        item = f"{base}/{info.plural}/{{name}}"
    op = {"x-kubernetes-group-version-kind": gvk, "x-kubernetes-action": "patch",
          "operationId": f"patch{info.kind}", "parameters": [_FIELD_VALIDATION],
          "responses": {"200": {"description": "OK"}}}
    paths = {item: {"patch": op}} if "patch" in info.verbs else {}
    return paths


def gv_document(reg: Registry, group: str, version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for info in reg.resources(group, version):
        paths.update(_ops(info))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": paths, "components": {"schemas": {}}}


def _keys(reg: Registry) -> list[tuple[str, str]]:
    out = [("", "v1")]
    for g, vs in reg.groups():
        out.extend((g, v) for v in vs)
    return out


def root(reg: Registry) -> dict[str, Any]:
    paths = {}
    for g, v in _keys(reg):
        doc = orjson.dumps(gv_document(reg, g, v))
        h = hashlib.sha512(doc).hexdigest()[:64].upper()
        paths[_gv_key(g, v)] = {"serverRelativeURL": f"/openapi/v3/{_gv_key(g, v)}?hash={h}"}
    return {"paths": paths}


V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def serve(reg: Registry, segs: list[str], request: web.Request) -> web.Response:
    if segs == ["v2"]:
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=b"", headers={"Content-Type": V2_PROTOBUF})
        return web.Response(body=orjson.dumps({
            "swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": {}, "definitions": {}}), content_type="application/json")
    if segs[:1] == ["v3"]:
        rest = segs[1:]
        if not rest:
            return web.Response(body=orjson.dumps(root(reg)), content_type="application/json")
        if rest[0] == "api" and len(rest) == 2:
            key = ("", rest[1])
        elif rest[0] == "apis" and len(rest) == 3:
            key = (rest[1], rest[2])
        else:
            key = None
        if key is not None and (key == ("", "v1") or reg.has_group_version(*key)):
            return web.Response(body=orjson.dumps(gv_document(reg, *key)),
                                content_type="application/json",
                                headers={"Cache-Control": "public, immutable"} if
                                "hash" in request.query else None)
    raise errors.not_found_path(request.path)
