"""Name rules the configuration validation needs: qualified names and extended resources.

Corresponds to apimachinery ``util/validation`` (``IsQualifiedName``, ``IsDNS1123Subdomain``)
and to ``IsExtendedResourceName``/``IsNativeResource`` of kubernetes ``pkg/apis/core/v1/helper``.
"""

from __future__ import annotations

import re

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# Resource names in this namespace are Kubernetes' own, never extended resources.
NATIVE_RESOURCE_PREFIX = "kubernetes.io/"
# Quota tracks an extended resource as "requests.<name>", which must stay a qualified name.
_QUOTA_REQUESTS_PREFIX = "requests."


def qualified_name_problems(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (``[prefix/]name``, as label keys); empty if it is."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name must be a name with an optional DNS subdomain prefix "
                "('example.com/MyName')"]
    problems = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            problems.append("prefix part must be a lowercase DNS subdomain of at most 253 "
                            "characters")
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 characters")
    elif not _NAME.match(name):
        problems.append("name part must consist of alphanumeric characters, '-', '_' or '.', "
                        "and must start and end with an alphanumeric character")
    return problems


def is_native_resource(name: str) -> bool:
    """cpu, memory, ... (no domain) and anything in the ``kubernetes.io/`` namespace."""
    return "/" not in name or NATIVE_RESOURCE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource that is not native (``example.com/gpu``)."""
    if is_native_resource(name) or name.startswith(_QUOTA_REQUESTS_PREFIX):
        return False
    return not qualified_name_problems(_QUOTA_REQUESTS_PREFIX + name)
