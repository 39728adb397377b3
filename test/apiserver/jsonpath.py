"""The JSONPath subset used by CRD ``additionalPrinterColumns``.

Corresponds to upstream ``k8s.io/client-go/util/jsonpath`` for the forms printer columns use:
``.a.b``, ``.a[0]``, ``.a[*].b``, ``.a['x.y']`` and filters ``.a[?(@.type=="Ready")].status``.
"""

from __future__ import annotations

import re
from typing import Any

_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)
      | \[(?P<index>-?\d+|\*)\]
      | \[['"](?P<quoted>[^'"]+)['"]\]
      | \[\?\(@\.(?P<fpath>[A-Za-z0-9_.\-]+)\s*(?P<op>==|!=)\s*(?P<fval>"[^"]*"|'[^']*'|[^)]+)\)\]
    """,
    re.VERBOSE,
)


def _steps(path: str) -> list[tuple[str, Any]]:
    p = path.strip()
    if p.startswith("{") and p.endswith("}"):
        p = p[1:-1]
    if p.startswith("$"):
        p = p[1:]
    steps: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(p):
        m = _TOKEN.match(p, pos)
        if not m:
            raise ValueError(f"unsupported JSONPath {path!r}")
        if m.group("field") is not None:
            steps.append(("field", m.group("field")))
        elif m.group("quoted") is not None:
            steps.append(("field", m.group("quoted")))
        elif m.group("index") is not None:
            idx = m.group("index")
            steps.append(("all", None) if idx == "*" else ("index", int(idx)))
        else:
            val = m.group("fval").strip()
            if val[:1] in "\"'":
                val = val[1:-1]
            steps.append(("filter", (m.group("fpath").split("."), m.group("op"), val)))
        pos = m.end()
    return steps


def find(obj: Any, path: str) -> list[Any]:
    """All values the path selects (an empty list if none)."""
    cur = [obj]
    for kind, arg in _steps(path):
        nxt: list[Any] = []
        for v in cur:
            if kind == "field":
                if isinstance(v, dict) and arg in v:
                    nxt.append(v[arg])
            elif kind == "index":
                if isinstance(v, list) and -len(v) <= arg < len(v):
                    nxt.append(v[arg])
            elif kind == "all":
                if isinstance(v, list):
                    nxt.extend(v)
                elif isinstance(v, dict):
                    nxt.extend(v.values())
            else:
                fpath, op, want = arg
                items = v if isinstance(v, list) else []
                for it in items:
                    x: Any = it
                    for k in fpath:
                        x = x.get(k) if isinstance(x, dict) else None
                    s = "true" if x is True else "false" if x is False else \
                        ("" if x is None else str(x))
                    if (s == want) == (op == "=="):
                        nxt.append(it)
        cur = nxt
    return cur
