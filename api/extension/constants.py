"""Domain prefixes of Koordinator's labels, annotations and resource names.

Corresponds to upstream `apis/extension/constants.go`. ``DOMAIN_PREFIX`` ends with
``/`` (``koordinator.sh/qosClass``); the other prefixes are joined with ``/``
(``scheduling.koordinator.sh/resource-spec``).
"""

from __future__ import annotations

DOMAIN_PREFIX = "koordinator.sh/"
# Prefix of the batch/mid extended resources (corev1.ResourceDefaultNamespacePrefix).
RESOURCE_DOMAIN_PREFIX = "kubernetes.io/"
SCHEDULING_DOMAIN_PREFIX = "scheduling.koordinator.sh"
INTERNAL_SCHEDULING_DOMAIN_PREFIX = "internal.scheduling.koordinator.sh"
NODE_DOMAIN_PREFIX = "node.koordinator.sh"
POD_DOMAIN_PREFIX = "pod.koordinator.sh"
GANG_DOMAIN_PREFIX = "gang.scheduling.koordinator.sh"
QUOTA_DOMAIN_PREFIX = "quota.scheduling.koordinator.sh"
KUBELET_DOMAIN_PREFIX = "kubelet.koordinator.sh"
CONFIG_DOMAIN_PREFIX = "config.koordinator.sh"

# Set on objects Koordinator writes (e.g. NodeResourceTopology by koordlet).
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY_KOORDINATOR = "Koordinator"

__all__ = [
    "CONFIG_DOMAIN_PREFIX", "DOMAIN_PREFIX", "GANG_DOMAIN_PREFIX",
    "INTERNAL_SCHEDULING_DOMAIN_PREFIX", "KUBELET_DOMAIN_PREFIX", "LABEL_MANAGED_BY",
    "MANAGED_BY_KOORDINATOR", "NODE_DOMAIN_PREFIX", "POD_DOMAIN_PREFIX", "QUOTA_DOMAIN_PREFIX",
    "RESOURCE_DOMAIN_PREFIX", "SCHEDULING_DOMAIN_PREFIX",
]
