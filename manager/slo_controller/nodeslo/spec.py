"""The NodeSLO spec koord-manager renders for a node.

Corresponds to ``getNodeSLOSpec`` of upstream `pkg/slo-controller/nodeslo`
(nodeslo_controller.go, resource_strategy.go). Starting from the stored spec:

* ``resourceUsedThresholdWithBE``, ``resourceQOSStrategy``, ``cpuBurstStrategy``,
  ``systemStrategy``: the first ``nodeStrategies`` entry of the key whose selector matches the
  node, else the key's cluster strategy (both already merged onto the defaults by
  ``api.configuration``);
* ``systemStrategy.totalNetworkBandwidth``: the node's ``node.koordinator.sh/network-bandwidth``
  annotation when set; upstream's quirk kept: an unparsable annotation leaves the node with no
  ``systemStrategy`` at all (the error is returned so the caller can report it);
* ``hostApplications``: the first matching ``nodeConfigs`` entry's list, else the cluster list;
* ``extensions``: kept from the stored spec (upstream's default build registers no extender).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.configuration import SLOControllerConfig
from api.errors import MalformedValueError
from api.slo.v1alpha1.nodeslo import NodeSLOSpec


def node_slo_spec(cfg: SLOControllerConfig, node: Mapping[str, Any],
                  stored: NodeSLOSpec | None = None
                  ) -> tuple[NodeSLOSpec, MalformedValueError | None]:
    """The spec for ``node`` and the node's annotation error, if any (see module docstring)."""
    bandwidth_error: MalformedValueError | None = None
    try:
        system = cfg.system.for_node(node)
    except MalformedValueError as err:
        system, bandwidth_error = None, err
    extensions = stored.extensions if stored is not None else None
    spec = NodeSLOSpec(
        resource_used_threshold_with_be=cfg.resource_threshold.for_node(node),
        resource_qos_strategy=cfg.resource_qos.for_node(node),
        cpu_burst_strategy=cfg.cpu_burst.for_node(node),
        system_strategy=system,
        extensions=extensions.model_copy(deep=True) if extensions is not None else None,
        # Upstream writes no list rather than an empty one (omitempty).
        host_applications=cfg.host_application.for_node(node) or None,
    )
    return spec, bandwidth_error


__all__ = ["node_slo_spec"]
