"""The three patch types: JSON patch, JSON merge patch and strategic merge patch.

Corresponds to upstream ``evanphx/json-patch`` (RFC 6902, RFC 7386) and
``k8s.io/apimachinery/pkg/util/strategicpatch`` (merge lists by key, ``$patch`` directives
``delete``/``replace``/``merge``, ``$retainKeys``, ``$deleteFromPrimitiveList/<f>``,
``$setElementOrder/<f>``). All functions take a mutable copy of the document and return the
patched document; malformed patches raise ``PatchError``.
"""

from __future__ import annotations

import copy
from typing import Any

from .smp_meta import Meta


class PatchError(ValueError):
    """The patch cannot be applied (maps to 422 or 400 by the caller)."""


# -- RFC 6902 JSON patch ----------------------------------------------------------------------


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container: list[Any], tok: str, for_add: bool) -> int:
    if tok == "-" and for_add:
        return len(container)
    try:
        i = int(tok)
    except ValueError:
        raise PatchError(f"invalid array index {tok!r}") from None
    if i < 0 or i > len(container) or (i == len(container) and not for_add):
        raise PatchError(f"array index {i} out of bounds")
    return i


def _parent(doc: Any, toks: list[str]) -> Any:
    cur = doc
    for t in toks[:-1]:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError(f"missing path element {t!r}")
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t, False)]
        else:
            raise PatchError(f"cannot traverse into {t!r}")
    return cur


def _get(doc: Any, toks: list[str]) -> Any:
    if not toks:
        return doc
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        if t not in p:
            raise PatchError(f"missing value at {'/'.join(toks)!r}")
        return p[t]
    if isinstance(p, list):
        return p[_index(p, t, False)]
    raise PatchError("invalid path")


def _add(doc: Any, toks: list[str], value: Any) -> Any:
    if not toks:
        return value
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        p[t] = value
    elif isinstance(p, list):
        p.insert(_index(p, t, True), value)
    else:
        raise PatchError("invalid path for add")
    return doc


def _remove(doc: Any, toks: list[str]) -> Any:
    if not toks:
        raise PatchError("cannot remove the document root")
    p = _parent(doc, toks)
    t = toks[-1]
    if isinstance(p, dict):
        if t not in p:
            raise PatchError(f"unable to remove nonexistent key: {t}: missing value")
        del p[t]
    elif isinstance(p, list):
        del p[_index(p, t, False)]
    else:
        raise PatchError("invalid path for remove")
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind = op["op"]
        toks = _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, toks, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, toks)
        elif kind == "replace":
            _get(doc, toks)
            if not toks:
                doc = copy.deepcopy(op.get("value"))
            else:
                doc = _remove(doc, toks)
                doc = _add(doc, toks, copy.deepcopy(op.get("value")))
        elif kind == "move":
            src = _pointer(op.get("from", ""))
            v = _get(doc, src)
            doc = _remove(doc, src)
            doc = _add(doc, toks, v)
        elif kind == "copy":
            v = copy.deepcopy(_get(doc, _pointer(op.get("from", ""))))
            doc = _add(doc, toks, v)
        elif kind == "test":
            if _get(doc, toks) != op.get("value"):
                raise PatchError(f"testing value {op.get('path')} failed: test failed")
        else:
            raise PatchError(f"unexpected operation {kind!r}")
    return doc


# -- RFC 7386 JSON merge patch ----------------------------------------------------------------


def merge_patch(doc: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(doc, dict):
        doc = {}
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
        elif isinstance(v, dict):
            doc[k] = merge_patch(doc.get(k), v)
        else:
            doc[k] = copy.deepcopy(v)
    return doc


# -- strategic merge patch --------------------------------------------------------------------

DIRECTIVE = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ORDER = "$setElementOrder/"


def strategic_merge_patch(doc: dict[str, Any], patch: Any, schema: dict[str, Meta]) -> Any:
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be a JSON object")
    return _merge_map(doc, patch, schema)


def _field_meta(schema: dict[str, Meta] | None, key: str) -> Meta | None:
    return schema.get(key) if schema else None


def _merge_map(
    orig: Any,
    patch: dict[str, Any],
    schema: dict[str, Meta] | None,
    retain: bool = False,
) -> Any:
    if not isinstance(orig, dict):
        orig = {}
    directive = patch.get(DIRECTIVE)
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != DIRECTIVE}, schema)
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError(f"Unknown patch type: {directive}, directive: {DIRECTIVE}")
    if RETAIN_KEYS in patch:
        keep = patch[RETAIN_KEYS]
        if not isinstance(keep, list):
            raise PatchError("$retainKeys must be a list")
        for k in list(orig):
            if k not in keep:
                del orig[k]
    orders: dict[str, list[Any]] = {}
    for k, v in patch.items():
        if k in (DIRECTIVE, RETAIN_KEYS):
            continue
        if k.startswith(SET_ORDER):
            orders[k[len(SET_ORDER) :]] = v
            continue
        if k.startswith(DELETE_PRIMITIVE):
            fld = k[len(DELETE_PRIMITIVE) :]
            cur = orig.get(fld)
            if isinstance(cur, list) and isinstance(v, list):
                orig[fld] = [x for x in cur if x not in v]
            continue
        meta = _field_meta(schema, k)
        if v is None:
            orig.pop(k, None)
            continue
        cur = orig.get(k)
        if meta is not None and meta.is_list and isinstance(v, list):
            merged = _merge_list(cur if isinstance(cur, list) else [], v, meta)
            orig[k] = merged
        elif isinstance(v, dict):
            sub = meta.struct if meta is not None else None
            res = _merge_map(
                cur if isinstance(cur, dict) else {},
                v,
                sub,
                retain=meta is not None and "retainKeys" in meta.strategies,
            )
            if res is None:
                orig.pop(k, None)
            else:
                orig[k] = res
        else:
            orig[k] = copy.deepcopy(v)
    for fld, order in orders.items():
        meta = _field_meta(schema, fld)
        if isinstance(orig.get(fld), list) and isinstance(order, list):
            orig[fld] = _apply_order(orig[fld], order, meta.merge_key if meta else None)
    return orig


def _strip(v: Any, schema: dict[str, Meta] | None) -> Any:
    """A patch value placed where nothing was: drop directives and nulls."""
    if isinstance(v, dict):
        return _merge_map({}, v, schema)
    if isinstance(v, list):
        return [_strip(x, None) for x in v if not (isinstance(x, dict) and DIRECTIVE in x)]
    return copy.deepcopy(v)


def _merge_list(orig: list[Any], patch: list[Any], meta: Meta) -> list[Any]:
    key = meta.merge_key
    if key is None:
        # A list of primitives with strategy merge: union, keeping the original order.
        out = list(orig)
        for x in patch:
            if isinstance(x, dict) and x.get(DIRECTIVE) == "replace":
                return [y for y in patch if not (isinstance(y, dict) and DIRECTIVE in y)]
            if x not in out:
                out.append(copy.deepcopy(x))
        return out
    if any(isinstance(x, dict) and x.get(DIRECTIVE) == "replace" for x in patch):
        return [
            _strip(x, meta.struct) for x in patch if not (isinstance(x, dict) and DIRECTIVE in x)
        ]
    out = list(orig)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"list items of a merge list must be objects (merge key {key})")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        idx = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]),
            None,
        )
        if item.get(DIRECTIVE) == "delete":
            if idx is not None:
                del out[idx]
            continue
        if idx is None:
            out.append(_merge_map({}, item, meta.struct))
        else:
            merged = _merge_map(out[idx], item, meta.struct, retain="retainKeys" in meta.strategies)
            if merged is None:
                del out[idx]
            else:
                out[idx] = merged
    return out


def _apply_order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Apply ``$setElementOrder``: listed elements first in the given order, then the rest."""

    def ident(x: Any) -> Any:
        return x.get(key) if key is not None and isinstance(x, dict) else x

    wanted = [ident(o) for o in order]
    pos: dict[Any, int] = {}
    for i, w in enumerate(wanted):
        try:
            pos.setdefault(w, i)
        except TypeError:
            return items
    try:
        ordered = sorted((x for x in items if ident(x) in pos), key=lambda x: pos[ident(x)])
    except TypeError:
        return items
    rest = [x for x in items if ident(x) not in pos]
    return ordered + rest
