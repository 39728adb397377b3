"""CustomResourceDefinitions: serving custom resources, schema defaulting, pruning, validation.

Corresponds to upstream ``apiextensions-apiserver``: the CRD registry strategy (names must be
``<plural>.<group>``, status with ``NamesAccepted``/``Established`` conditions and
``storedVersions``), the dynamic serving of every served version
(``customresource_handler.go``), ``structural/defaulting`` (``default:`` values applied on
create and update), ``structural/pruning`` (unknown fields are dropped unless
``x-kubernetes-preserve-unknown-fields``; with ``fieldValidation=Strict`` they are an error)
and a subset of schema validation (type, required, enum, nullable, min/max, length, items).
Conversion between versions is the ``None`` strategy: only ``apiVersion`` changes.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from . import errors
from .api import Api
from .meta import now_rfc3339
from .resources import STATUS_VERBS, ResourceInfo, SubresourceInfo
from .selectors import path_getter
from .strategy import Cause, Strategy
from .watch import Stored

Obj = dict[str, Any]
CRD_GR = ("apiextensions.k8s.io", "customresourcedefinitions")


# -- schema walking ---------------------------------------------------------------------------

def _schema_of(crd: Obj, version: str) -> Obj | None:
    spec = crd.get("spec") or {}
    for v in spec.get("versions") or []:
        if v.get("name") == version:
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            if s is not None:
                return s
    return (spec.get("validation") or {}).get("openAPIV3Schema")


def prune_and_default(value: Any, schema: Obj | None, path: str, unknown: list[str],
                      root: bool = False) -> Any:
    """Drop fields the schema does not declare, fill ``default:`` values, recursively."""
    if schema is None or not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        embedded = schema.get("x-kubernetes-embedded-resource") is True
        if props is None and addl is None and not preserve and "type" not in schema:
            # An empty schema ({}), e.g. a pure x-kubernetes-int-or-string: nothing to prune.
            return value
        props = props or {}
        for key in list(value):
            sub = f"{path}.{key}" if path else key
            if (root or embedded) and key in ("apiVersion", "kind", "metadata"):
                continue  # ObjectMeta is never pruned by the CRD schema
            if key in props:
                value[key] = prune_and_default(value[key], props[key], sub, unknown)
            elif isinstance(addl, dict):
                value[key] = prune_and_default(value[key], addl, sub, unknown)
            elif addl is True or preserve:
                continue
            else:
                unknown.append(sub)
                del value[key]
        for key, ps in props.items():
            if isinstance(ps, dict) and "default" in ps and key not in value:
                value[key] = prune_and_default(copy.deepcopy(ps["default"]), ps,
                                               f"{path}.{key}" if path else key, unknown)
        return value
    if isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            return [prune_and_default(v, items, f"{path}[{i}]", unknown)
                    for i, v in enumerate(value)]
    return value


_TYPE_CHECK = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}
_GO_TYPE = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object",
            list: "array"}


def validate(value: Any, schema: Obj | None, path: str, causes: list[Cause]) -> None:
    """A subset of OpenAPI v3 validation, with kube-apiserver's messages."""
    if not isinstance(schema, dict) or not schema:
        return
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            causes.append(("FieldValueTypeInvalid", path,
                           f'Invalid value: "null": {path} in body must be of type '
                           f'{schema["type"]}: "null"'))
        return
    typ = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            causes.append(("FieldValueTypeInvalid", path,
                           f"Invalid value: {_go(value)}: {path} in body must be of type "
                           "integer,string"))
            return
        # A string still meets the string constraints: a quantity's pattern refuses "NaN".
        typ = None
    if typ and typ in _TYPE_CHECK and not _TYPE_CHECK[typ](value):
        causes.append(("FieldValueTypeInvalid", path,
                       f'Invalid value: "{_GO_TYPE.get(type(value), "unknown")}": {path} in '
                       f'body must be of type {typ}: "{_GO_TYPE.get(type(value), "unknown")}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_go(e) for e in schema["enum"])
        causes.append(("FieldValueNotSupported", path,
                       f"Unsupported value: {_go(value)}: supported values: {allowed}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(("FieldValueInvalid", path, f"Invalid value: {value}: {path} in body "
                           f"should be greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(("FieldValueInvalid", path, f"Invalid value: {value}: {path} in body "
                           f"should be less than or equal to {schema['maximum']}"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(("FieldValueTooLong", path, f"Too long: may not be more than "
                           f"{schema['maxLength']} bytes"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            causes.append(("FieldValueInvalid", path, f'Invalid value: "{value}": {path} in '
                           f'body should be at least {schema["minLength"]} chars long'))
        if "pattern" in schema:
            try:
                if not re.search(schema["pattern"], value):
                    causes.append(("FieldValueInvalid", path, f'Invalid value: "{value}": '
                                   f'{path} in body should match \'{schema["pattern"]}\''))
            except re.error:
                pass
    if isinstance(value, dict):
        for req in schema.get("required") or []:
            if req not in value:
                p = f"{path}.{req}" if path else req
                causes.append(("FieldValueRequired", p, "Required value"))
        props = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, v in value.items():
            p = f"{path}.{k}" if path else k
            if k in props:
                validate(v, props[k], p, causes)
            elif isinstance(addl, dict):
                validate(v, addl, p, causes)
    elif isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            causes.append(("FieldValueTooMany", path,
                           f"Too many: {len(value)}: must have at most {schema['maxItems']} "
                           "items"))
        if "minItems" in schema and len(value) < schema["minItems"]:
            causes.append(("FieldValueInvalid", path, f"Invalid value: {len(value)}: {path} "
                           f"in body should have at least {schema['minItems']} items"))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                validate(v, items, f"{path}[{i}]", causes)


def _go(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)


# -- the CRD resource itself ------------------------------------------------------------------

def _storage_version(crd: Obj) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("storage"):
            return v.get("name")
    return None


def crd_default(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    names = spec.setdefault("names", {})
    if names.get("kind"):
        names.setdefault("listKind", names["kind"] + "List")
        names.setdefault("singular", names["kind"].lower())
    spec.setdefault("conversion", {"strategy": "None"})
    for v in spec.get("versions") or []:
        v.setdefault("served", True)


def crd_validate(obj: Obj) -> list[Cause]:
    spec = obj.get("spec") or {}
    names = spec.get("names") or {}
    causes: list[Cause] = []
    group = spec.get("group") or ""
    if not group:
        causes.append(("FieldValueRequired", "spec.group", "Required value"))
    for f in ("plural", "kind"):
        if not names.get(f):
            causes.append(("FieldValueRequired", f"spec.names.{f}", "Required value"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("FieldValueNotSupported", "spec.scope",
                       f'Unsupported value: "{spec.get("scope", "")}": supported values: '
                       '"Cluster", "Namespaced"'))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("FieldValueRequired", "spec.versions", "Required value"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("FieldValueInvalid", "spec.versions",
                       "Invalid value: must have exactly one version marked as storage version"))
    want = f"{names.get('plural', '')}.{group}"
    if names.get("plural") and group and obj["metadata"].get("name") != want:
        causes.append(("FieldValueInvalid", "metadata.name",
                       f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.'
                       f'plural+"."+spec.group'))
    return causes


def crd_prepare_create(obj: Obj) -> None:
    spec = obj["spec"]
    names = dict(spec.get("names") or {})
    now = now_rfc3339()
    sv = _storage_version(obj)
    obj["status"] = {
        "acceptedNames": names,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": now,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "storedVersions": [sv] if sv else [],
    }


def crd_prepare_update(new: Obj, old: Obj) -> None:
    status = copy.deepcopy(old.get("status") or {})
    status["acceptedNames"] = dict((new.get("spec") or {}).get("names") or {})
    sv = _storage_version(new)
    stored = status.setdefault("storedVersions", [])
    if sv and sv not in stored:
        stored.append(sv)
    new["status"] = status


def crd_validate_update(new: Obj, old: Obj) -> list[Cause]:
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    causes: list[Cause] = []
    if ns.get("group") != os_.get("group"):
        causes.append(("FieldValueInvalid", "spec.group", "Invalid value: field is immutable"))
    if (ns.get("names") or {}).get("plural") != (os_.get("names") or {}).get("plural"):
        causes.append(("FieldValueInvalid", "spec.names.plural",
                       "Invalid value: field is immutable"))
    return causes


# -- serving custom resources -----------------------------------------------------------------

def resource_infos(crd: Obj) -> list[ResourceInfo]:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec["group"]
    sv = _storage_version(crd) or ""
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        subs: dict[str, SubresourceInfo] = {}
        sr = v.get("subresources") or {}
        if "status" in sr:
            subs["status"] = SubresourceInfo("status", names["kind"], STATUS_VERBS)
        if "scale" in sr:
            subs["scale"] = SubresourceInfo("scale", "Scale", STATUS_VERBS, "autoscaling", "v1")
        fields = {f["jsonPath"].lstrip("."): path_getter(f["jsonPath"].lstrip("."))
                  for f in v.get("selectableFields") or [] if f.get("jsonPath")}
        out.append(ResourceInfo(
            group=group, version=v["name"], plural=names["plural"], kind=names["kind"],
            namespaced=spec.get("scope") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=subs, storage=(group, names["plural"]), fields=fields,
            generation=True, strategic=False, crd=crd, storage_version=sv,
        ))
    return out


class CRStrategy(Strategy):
    """Defaulting, pruning and validation of one CRD's objects, from its schema."""

    def __init__(self, api: Api, gr: tuple[str, str]) -> None:
        super().__init__(default=self._default, validate=self._validate)
        self.api = api
        self.gr = gr
        self.crd: Obj = {}

    def _schema(self, obj: Obj) -> Obj | None:
        version = str(obj.get("apiVersion", "")).rsplit("/", 1)[-1]
        return _schema_of(self.crd, version)

    def prune(self, obj: Obj) -> list[str]:
        unknown: list[str] = []
        prune_and_default(obj, self._schema(obj), "", unknown, root=True)
        return unknown

    def _default(self, obj: Obj) -> None:
        self.prune(obj)

    def _validate(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        schema = self._schema(obj)
        if schema:
            body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
            sch = dict(schema)
            props = {k: v for k, v in (sch.get("properties") or {}).items()
                     if k not in ("apiVersion", "kind", "metadata")}
            sch["properties"] = props
            sch["required"] = [r for r in sch.get("required") or []
                               if r not in ("apiVersion", "kind", "metadata")]
            validate(body, sch, "", causes)
        return causes


def install(api: Api) -> None:
    """Serve the CRD resource, the custom resources of the CRDs already stored (restored from
    a previous run) and keep custom resources registered as CRDs change."""
    api.strategies[CRD_GR] = Strategy(crd_default, crd_prepare_create, crd_prepare_update,
                                      crd_validate, crd_validate_update)
    served: dict[tuple[str, str], list[str]] = {}

    def on_write(info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage != CRD_GR:
            return
        crd = st.obj
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        gr = (spec.get("group", ""), names.get("plural", ""))
        deleting = type_ == "DELETED"
        for v in served.pop(gr, []):
            api.registry.remove(gr[0], v, gr[1])
        if deleting:
            coll = api.storage.collections.get(gr)
            if coll is not None:
                infos = resource_infos(crd)
                cr_info = infos[0] if infos else None
                for item in list(coll.items.values()):
                    d = api.storage.delete(coll, item)
                    if cr_info is not None:
                        api._finish_write(cr_info, "DELETED", d)
            api.storage.drop_collection(gr)
            api.strategies.pop(gr, None)
            return
        infos = resource_infos(crd)
        for ri in infos:
            api.registry.add(ri)
        served[gr] = [ri.version for ri in infos]
        strat = api.strategies.get(gr)
        if not isinstance(strat, CRStrategy):
            strat = CRStrategy(api, gr)
            api.strategies[gr] = strat
        strat.crd = crd
        api.collection(infos[0]) if infos else None

    api.after_write.append(on_write)
    crd_info = api.info(CRD_GR[0], "v1", CRD_GR[1])
    for st in api.collection(crd_info).sorted_items():
        on_write(crd_info, "ADDED", st)


def strict_unknown_fields(unknown: list[str]) -> errors.ApiError:
    msg = ", ".join(f'unknown field "{u}"' for u in unknown)
    return errors.bad_request(f"strict decoding error: {msg}")
