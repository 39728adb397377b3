"""The admission handlers by path (upstream `pkg/webhook/server.go`'s ``HandlerMap``, filled by
``addHandlersWithGate`` in `add_pod.go`, `add_quota.go`, `add_configmap.go`, `add_node.go` and
`add_reservation.go`).

This is the one place handlers are registered. Each handler module declares the paths it serves,
the feature gate of each and how its handler is built (``framework.HandlerBuilder``).
"""

from __future__ import annotations

from .clustercolocationprofile import validating as profile_validating
from .configmap import validating as configmap_validating
from .elasticquota import handlers as elasticquota_handlers
from .framework import HandlerBuilder
from .node import mutating as node_mutating
from .node import validating as node_validating
from .pod import mutating as pod_mutating
from .pod import validating as pod_validating
from .reservation import mutating as reservation_mutating
from .reservation import validating as reservation_validating

HANDLER_BUILDERS: dict[str, HandlerBuilder] = {
    builder.path: builder
    for module in (pod_mutating, pod_validating, elasticquota_handlers, configmap_validating,
                   node_mutating, node_validating, reservation_mutating, reservation_validating,
                   profile_validating)
    for builder in module.HANDLER_BUILDERS
}
