"""Request bodies: the size limit, decoding, and whether an object can be served back.

Corresponds to upstream ``k8s.io/apiserver/pkg/endpoints/handlers/rest.go``
(``limitedReadBody``: 413 above 3 MiB) and the JSON/YAML serializers of
``k8s.io/apimachinery/pkg/runtime/serializer`` (decode errors are 400 BadRequest, answered
before admission). Owns every body the handlers read (create, update, patch, subresources,
delete options) and ``check_storable``, which ``api.Api`` runs on the final object of every
write: nothing is stored that a list, a watch or a webhook call could not encode.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml
from aiohttp import web

from api.extension.codec import json_nesting_exceeds

from . import errors
from .meta import json_kind

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
# orjson encodes at most 255 nested objects and arrays ("Recursion limit reached"); kube's
# decoder allows 10,000. The deepest wrapper the server puts around a stored object is a Table
# watch event (event, Table, rows, row: 4 levels; an AdmissionReview adds 2), so 240 levels
# leave room for them and for defaulting, and every accepted body can be served back.
MAX_DEPTH = 240
_ORJSON_DEPTH = 255
# A YAML document's aliases may expand it far beyond its size (a "billion laughs" body):
# its expanded node count is bounded, as go-yaml refuses "excessive aliasing".
MAX_YAML_NODES = 1_000_000
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
PROTOBUF = "application/vnd.kubernetes.protobuf"
# "" is a request without Content-Type, read as JSON like the server always has.
JSON_TYPES = ("application/json", "")
OBJECT_MEDIA_TYPES = ("application/json", "application/yaml", PROTOBUF)


async def read(request: web.Request) -> bytes:
    """The body, refused with 413 past MAX_BODY_BYTES without reading more than that."""
    if (request.content_length or 0) > MAX_BODY_BYTES:
        raise errors.request_entity_too_large(MAX_BODY_BYTES)
    buf = bytearray()
    async for chunk in request.content.iter_any():
        buf += chunk
        if len(buf) > MAX_BODY_BYTES:
            raise errors.request_entity_too_large(MAX_BODY_BYTES)
    return bytes(buf)


def _depth_error(obj: Any, limit: int = MAX_DEPTH) -> str | None:
    """Why orjson cannot encode ``obj`` (``limit`` levels at most) inside the server's
    wrappers, or None if it can."""
    wrapped = obj
    for _ in range(_ORJSON_DEPTH - limit):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except orjson.JSONEncodeError as e:
        if "Recursion limit" in str(e):
            return f"nested more than {MAX_DEPTH} levels deep"
        return str(e)
    return None


def check_storable(group: str, kind: str, obj: dict[str, Any]) -> None:
    """422 Invalid when the object (after patching, defaulting and admission) could not be
    served back."""
    why = _depth_error(obj)
    if why is None:
        return
    field = next((k for k in obj if _depth_error(obj[k], MAX_DEPTH - 1) is not None), "")
    name = (obj.get("metadata") or {}).get("name") or ""
    raise errors.invalid(group, kind, name, [("FieldValueInvalid", field,
                                              f'Invalid value: "object": {why}')])


# orjson's parser recurses on the C stack: about 100,000 levels (a 600 KB body) crash the
# process. Bodies are measured before it parses them; 1,000 levels is far beyond MAX_DEPTH and
# far inside what it parses safely.
MAX_DECODE_DEPTH = 1000
def decode_json(raw: bytes, what: str, *, check_depth: bool = True) -> Any:
    """JSON that the server could store and serve back; else 400 BadRequest "<what>: why".
    ``check_depth=False`` leaves the depth to the caller (which can name the object)."""
    if json_nesting_exceeds(raw, MAX_DECODE_DEPTH):
        raise errors.bad_request(f"{what}: nested more than {MAX_DECODE_DEPTH} levels deep")
    try:
        out = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"{what}: {e}") from None
    why = _depth_error(out) if check_depth else None
    if why is not None:
        raise errors.bad_request(f"{what}: {why}")
    return out


def _expanded_nodes(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes of the document with every alias expanded (memoized: each alias adds the size of
    the node it names without walking it again)."""
    n = memo.get(id(node))
    if n is not None:
        return n
    memo[id(node)] = 1  # a recursive alias counts once, not forever
    if isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_nodes(k, memo) + _expanded_nodes(v, memo) for k, v in node.value)
    elif isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_nodes(v, memo) for v in node.value)
    else:
        n = 1
    memo[id(node)] = n
    return n


def decode_yaml(raw: bytes, what: str, *, check_depth: bool = True) -> Any:
    """One YAML document as JSON values (keys as strings, as sigs.k8s.io/yaml converts)."""
    loader = yaml.SafeLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            raise errors.bad_request(f"{what}: the YAML document is empty")
        if _expanded_nodes(node, {}) > MAX_YAML_NODES:
            raise errors.bad_request(f"{what}: error converting YAML to JSON: yaml: document "
                                     "contains excessive aliasing")
        value = loader.construct_document(node)
        # Round-trip through JSON: dates become strings, non-string keys strings; values JSON
        # cannot hold (sets, binary, huge integers) are errors here rather than after storing.
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except yaml.YAMLError as e:
        raise errors.bad_request(f"{what}: error converting YAML to JSON: {e}") from None
    except RecursionError:  # PyYAML composes recursively: far deeper than MAX_DEPTH
        raise errors.bad_request(f"{what}: nested more than {MAX_DEPTH} levels deep") from None
    except orjson.JSONEncodeError as e:
        if "Recursion limit" not in str(e):
            raise errors.bad_request(f"{what}: error converting YAML to JSON: {e}") from None
        # Deeper than orjson writes: the standard encoder goes on, so that the caller can
        # name the object and the field that is too deep.
        text = _deep_json(value, what)
    finally:
        loader.dispose()
    return decode_json(text, what, check_depth=check_depth)


def _deep_json(value: Any, what: str) -> bytes:
    try:
        return json.dumps(value, default=str).encode()
    except RecursionError:
        raise errors.bad_request(f"{what}: nested more than {MAX_DEPTH} levels deep") from None


def decode_object(raw: bytes, content_type: str, group: str, kind: str) -> dict[str, Any]:
    """A create/update body of ``kind`` as a JSON object; 400 BadRequest naming the problem,
    in kube-apiserver's words where it has them. An object that decodes but is too deep to be
    served back is 422 Invalid naming it and the field (``check_storable``), still before
    admission."""
    from . import protobuf

    what = f"the object provided is unrecognized (must be of type {kind})"
    if not raw:
        raise errors.bad_request("the request body is empty")
    if content_type in YAML_TYPES:
        out = decode_yaml(raw, what, check_depth=False)
    elif content_type == PROTOBUF:
        out = protobuf.decode(raw)
    elif content_type not in JSON_TYPES:
        raise errors.unsupported_media_type(content_type, OBJECT_MEDIA_TYPES)
    else:
        out = decode_json(raw, f"{what}: couldn't get version/kind; json parse error",
                          check_depth=False)
    if not isinstance(out, dict):
        raise errors.bad_request(
            f"{what}: couldn't get version/kind; json parse error: json: cannot unmarshal "
            f"{json_kind(out)} into Go value of type struct {{ APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }')
    check_storable(group, kind, out)
    return out



# DeleteOptions' fields as Go types them (their values are read by api.Api.delete).
_DELETE_OPTIONS = {"gracePeriodSeconds": ("int64", lambda v: isinstance(v, int)
                                          and not isinstance(v, bool)),
                   "preconditions": ("v1.Preconditions", lambda v: isinstance(v, dict) and all(
                       isinstance(x, str | None) for x in v.values())),
                   "propagationPolicy": ("v1.DeletionPropagation", lambda v: isinstance(v, str)),
                   "orphanDependents": ("bool", lambda v: isinstance(v, bool)),
                   "dryRun": ("[]string", lambda v: isinstance(v, list)
                              and all(isinstance(x, str) for x in v))}


def check_delete_options(options: dict[str, Any]) -> None:
    """400 for a DeleteOptions field of the wrong JSON type, in Go's decoding words."""
    for k, v in options.items():
        typed = _DELETE_OPTIONS.get(k)
        if v is not None and typed is not None and not typed[1](v):
            raise errors.bad_request(
                f"json: cannot unmarshal {json_kind(v)} into Go struct field "
                f"DeleteOptions.{k} of type {typed[0]}")
