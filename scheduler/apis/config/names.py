"""Resource-name rules the configuration validation needs: native and extended resources.

Corresponds to ``IsExtendedResourceName``/``IsNativeResource`` of kubernetes
``pkg/apis/core/v1/helper``; qualified names are ``pkg.util.validation.is_qualified_name``.
"""

from __future__ import annotations

from pkg.util.validation import is_qualified_name

# Resource names in this namespace are Kubernetes' own, never extended resources.
NATIVE_RESOURCE_PREFIX = "kubernetes.io/"
# Quota tracks an extended resource as "requests.<name>", which must stay a qualified name.
_QUOTA_REQUESTS_PREFIX = "requests."


def is_native_resource(name: str) -> bool:
    """cpu, memory, ... (no domain) and anything in the ``kubernetes.io/`` namespace."""
    return "/" not in name or NATIVE_RESOURCE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """A domain-prefixed resource that is not native (``example.com/gpu``)."""
    if is_native_resource(name) or name.startswith(_QUOTA_REQUESTS_PREFIX):
        return False
    return not is_qualified_name(_QUOTA_REQUESTS_PREFIX + name)
