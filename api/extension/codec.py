"""Go's parsing rules for label and annotation values, failing with ``MalformedValueError``.

No single upstream file: these are the rules of Go's ``strconv`` (``ParseInt``, ``ParseBool``,
``ParseFloat``) and ``encoding/json`` that upstream's getters in ``apis/extension`` rely on.
Every helper here raises :class:`api.errors.MalformedValueError` naming the key, and nothing else,
so callers catch one type.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from api.errors import MalformedValueError

T = TypeVar("T")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_BITS_RANGE = {32: (INT32_MIN, INT32_MAX), 64: (INT64_MIN, INT64_MAX)}
_PREFIX_BASES = {"b": 2, "o": 8, "x": 16}
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


# --- strconv ---------------------------------------------------------------------------------


def _underscores_ok(text: str) -> bool:
    """Go's ``underscoreOK``: ``_`` only between digits, or between a base prefix and a digit."""
    if text[:1] in ("+", "-"):
        text = text[1:]
    saw, i, hexa = "^", 0, False
    if len(text) >= 2 and text[0] == "0" and text[1].lower() in _PREFIX_BASES:
        i, saw, hexa = 2, "0", text[1].lower() == "x"
    for char in text[i:]:
        if char.isdigit() and char.isascii() or hexa and char.lower() in "abcdef":
            saw = "0"
        elif char == "_":
            if saw != "0":
                return False
            saw = "_"
        elif saw == "_":
            return False
        else:
            saw = "!"
    return saw != "_"


def parse_int(text: str, *, base: int = 10, bits: int = 64) -> int:
    """Go's ``strconv.ParseInt(text, base, bits)`` for base 10 or 0 (auto-detect).

    Base 0 accepts ``0x``/``0o``/``0b`` prefixes, a leading ``0`` for octal (``"010"`` = 8) and
    underscores between digits. Raises ValueError saying what is wrong.
    """
    if base not in (0, 10):
        raise ValueError(f"unsupported base {base}")
    if text == "":
        raise ValueError("empty string is not an integer")
    digits, negative = text, False
    if digits[0] in "+-":
        negative, digits = digits[0] == "-", digits[1:]
    if digits == "":
        raise ValueError(f"{text!r} is not an integer")
    radix = base or 10
    if base == 0 and digits[0] == "0":
        if len(digits) >= 3 and digits[1].lower() in _PREFIX_BASES:
            radix, digits = _PREFIX_BASES[digits[1].lower()], digits[2:]
        else:
            radix, digits = 8, digits[1:]
    value, underscores = 0, False
    for char in digits:
        if char == "_" and base == 0:
            underscores = True
            continue
        digit = _DIGITS.find(char.lower()) if char.isascii() else -1
        if digit < 0 or digit >= radix:
            kind = "an integer (0x/0o/0b/0 prefixes allowed)" if base == 0 else "a decimal integer"
            raise ValueError(f"{text!r} is not {kind}")
        value = value * radix + digit
    if underscores and not _underscores_ok(text[1:] if text[0] in "+-" else text):
        raise ValueError(f"{text!r} has misplaced underscores")
    value = -value if negative else value
    low, high = _BITS_RANGE[bits]
    if not low <= value <= high:
        raise ValueError(f"{text!r} is out of the int{bits} range")
    return value


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``: 1 t T TRUE true True / 0 f F FALSE false False."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise ValueError(f"{text!r} is not a boolean (true/false/1/0/t/f)")


_FLOAT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_SPECIAL_FLOATS = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
                   "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan,
                   "+nan": math.nan, "-nan": math.nan}


def parse_float(text: str) -> float:
    """Go's ``strconv.ParseFloat(text, 64)`` for decimal forms (``"1.20"``, ``".5"``, ``"1e3"``,
    ``"Inf"``, ``"NaN"``); values beyond float64 are out of range."""
    special = _SPECIAL_FLOATS.get(text.lower())
    if special is not None:
        return special
    if not _FLOAT.fullmatch(text):
        raise ValueError(f"{text!r} is not a number")
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text!r} is out of the float64 range")
    return value


# --- encoding/json ---------------------------------------------------------------------------

# The deepest a label, annotation or ConfigMap value's JSON may nest. Upstream's shapes nest
# fewer than 10 levels; Go's decoder allows 10,000, which Python's recursive decoder (and
# everything that walks the result) cannot take: it raised RecursionError from about 1,000.
MAX_JSON_DEPTH = 100
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(range(256)).translate(None, b"{}[]")
_BRACKET_DELTA = {ord("{"): 1, ord("["): 1, ord("}"): -1, ord("]"): -1}


def json_nesting_exceeds(raw: str | bytes, limit: int) -> bool:
    """Whether JSON text nests more than ``limit`` objects and arrays (brackets inside strings
    skipped). Linear and without recursion, so any input is safe to measure before a parser
    that recurses: the standard library's raises RecursionError, orjson's crashes the process
    near 100,000 levels. Nearly free for text with few brackets."""
    data = raw.encode() if isinstance(raw, str) else raw
    if data.count(b"{") + data.count(b"[") <= limit:
        return False
    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_BRACKET_DELTA.__getitem__, brackets)), default=0) > limit


def json_depth_error(text: str) -> str | None:
    """Why ``text`` nests too deep to decode (beyond ``MAX_JSON_DEPTH``), or None."""
    if json_nesting_exceeds(text, MAX_JSON_DEPTH):
        return f"JSON nested more than {MAX_JSON_DEPTH} levels deep"
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def require_str(key: str, raw: Any) -> str:
    """``raw`` itself when it is a string (label and annotation values always are)."""
    if not isinstance(raw, str):
        raise MalformedValueError(key, f"expected a string value, got {type(raw).__name__}")
    return raw


def decode_json(key: str, raw: str) -> Any:
    """``raw`` parsed as strict JSON (no NaN/Infinity, at most ``MAX_JSON_DEPTH`` levels),
    else MalformedValueError for ``key``."""
    require_str(key, raw)
    too_deep = json_depth_error(raw)
    if too_deep is not None:
        raise MalformedValueError(key, f"not valid JSON: {too_deep}")
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise MalformedValueError(key, f"not valid JSON: {exc}") from None


def _location(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif isinstance(part, str) and ("[" in part or part.startswith("function-")):
            continue  # a validator's or union member's name, not part of the JSON path
        else:
            path += f".{part}" if path else str(part)
    return path


def describe_validation_error(exc: ValidationError, *, limit: int = 3) -> str:
    """The first errors of ``exc`` as ``path: message`` (``gpu[0].minor: ...``)."""
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:limit]:
        where = _location(tuple(error["loc"]))
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)


def validate(key: str, target: type[T] | TypeAdapter[T], data: Any) -> T:
    """``data`` validated as ``target`` (a model or TypeAdapter), else MalformedValueError."""
    try:
        if isinstance(target, TypeAdapter):
            return target.validate_python(data)
        if issubclass(target, BaseModel):
            return target.model_validate(data)
        raise TypeError(f"cannot validate as {target!r}")
    except ValidationError as exc:
        raise MalformedValueError(key, describe_validation_error(exc)) from None
    except (ValueError, ArithmeticError) as exc:  # a validator's own error escaping pydantic
        raise MalformedValueError(key, str(exc)) from None


def decode_model(key: str, raw: str, model: type[T]) -> T:
    """A JSON object into ``model``; JSON ``null`` decodes to the empty model, as in Go."""
    data = decode_json(key, raw)
    return validate(key, model, {} if data is None else data)


def decode_value(key: str, raw: str, adapter: TypeAdapter[T]) -> T | None:
    """A JSON list or map through ``adapter``; JSON ``null`` gives None (a nil slice/map)."""
    data = decode_json(key, raw)
    return None if data is None else validate(key, adapter, data)


def parse_int_value(key: str, raw: str, *, base: int = 10, bits: int = 64) -> int:
    """:func:`parse_int` failing with MalformedValueError for ``key``."""
    require_str(key, raw)
    try:
        return parse_int(raw, base=base, bits=bits)
    except ValueError as exc:
        raise MalformedValueError(key, str(exc)) from None


def parse_bool_value(key: str, raw: str) -> bool:
    """:func:`parse_bool` failing with MalformedValueError for ``key``."""
    require_str(key, raw)
    try:
        return parse_bool(raw)
    except ValueError as exc:
        raise MalformedValueError(key, str(exc)) from None


def parse_float_value(key: str, raw: str) -> float:
    """:func:`parse_float` failing with MalformedValueError for ``key``."""
    require_str(key, raw)
    try:
        return parse_float(raw)
    except ValueError as exc:
        raise MalformedValueError(key, str(exc)) from None


__all__ = [
    "INT32_MAX", "INT32_MIN", "INT64_MAX", "INT64_MIN", "MAX_JSON_DEPTH", "decode_json",
    "decode_model", "decode_value", "describe_validation_error", "json_depth_error",
    "parse_bool", "parse_bool_value", "parse_float", "parse_float_value", "parse_int",
    "parse_int_value", "require_str", "validate",
]
