"""Rules kept up to date from statesinformer (upstream `pkg/koordlet/runtimehooks/rule`:
`Register` + `UpdateRules`, and each hook's `ruleUpdateCb`).

`RuleUpdater(rules, node_slo, node, on_change)` parses the NodeSLO spec (`NodeSLOSpec`
callback) into the batch-resource and group-identity rules, and the node's annotations
(`NodeMetadata` callback) into the CPU normalization ratio. The `Rules` object is the one the
hook server and the reconciler share, so a change is visible to both at once; when a rule
changed, `on_change` re-applies the hooks to every pod (upstream's rule-update callback)
instead of waiting for the next reconcile round. A malformed node annotation is logged naming
the node and the previous value is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from api.errors import MalformedValueError
from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.runtimehooks.rule import GroupIdentityRule, Rules
from koordlet.statesinformer.callbacks import RegisterType

logger = logging.getLogger(__name__)


class RuleUpdater:
    def __init__(self, rules: Rules, node_slo: Callable[[], NodeSLO | None],
                 node: Callable[[], dict[str, Any] | None],
                 on_change: Callable[[], object]) -> None:
        self.rules = rules
        self.node_slo = node_slo
        self.node = node
        self.on_change = on_change

    def update_node_slo(self) -> bool:
        slo = self.node_slo()
        if slo is None:
            return False
        changed = self.rules.batch_resource.update_node_slo(slo.spec)
        group_identity = GroupIdentityRule.from_node_slo(slo.spec)
        if group_identity != self.rules.group_identity:
            self.rules.group_identity = group_identity
            changed = True
        return changed

    def update_node_metadata(self) -> bool:
        node = self.node()
        if node is None:
            return False
        meta = node.get("metadata") or {}
        try:
            return self.rules.batch_resource.update_node_annotations(
                meta.get("annotations") or {})
        except MalformedValueError as e:
            logger.error("node %s: %s; keeping cpu normalization ratio %s", meta.get("name"),
                         e, self.rules.batch_resource.cpu_normalization_ratio)
            return False

    def callback(self, rtype: RegisterType, target: object) -> None:
        """The statesinformer callback for `NodeSLOSpec` and `NodeMetadata`."""
        update = (self.update_node_slo if rtype is RegisterType.NODE_SLO_SPEC
                  else self.update_node_metadata)
        if update():
            logger.info("runtime hook rules changed on %s, re-applying to all pods", rtype)
            self.on_change()
