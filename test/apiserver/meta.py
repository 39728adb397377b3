"""ObjectMeta helpers: timestamps, UIDs, name generation and name validation.

Corresponds to upstream ``k8s.io/apiserver/pkg/registry/rest`` (``FillObjectMetaSystemFields``,
``names.SimpleNameGenerator``) and ``apimachinery/pkg/util/validation``.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from datetime import UTC, datetime
from typing import Any

_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_GEN_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # as upstream's utilrand: no vowels, no 0/1/3


def now_rfc3339(ts: float | None = None) -> str:
    """metav1.Time: RFC 3339 with second precision, UTC."""
    t = time.gmtime(time.time() if ts is None else ts)
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", t)


def now_micro(ts: float | None = None) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    dt = datetime.fromtimestamp(time.time() if ts is None else ts, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generate_name(prefix: str) -> str:
    """``generateName`` prefix plus 5 random characters (prefix cut to fit 63 characters)."""
    if len(prefix) > 58:
        prefix = prefix[:58]
    return prefix + "".join(random.choices(_GEN_ALPHABET, k=5))


def validate_name(name: str, label: bool = False) -> str | None:
    """An error message if ``name`` is not a DNS-1123 subdomain (or label), else None."""
    if label:
        if len(name) > 63:
            return "must be no more than 63 characters"
        if not _DNS1123_LABEL.match(name):
            return (
                "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                "characters or '-', and must start and end with an alphanumeric character"
            )
        return None
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.match(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return None


def labels_of(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
