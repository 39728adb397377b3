"""Rules kept up to date from statesinformer (upstream `pkg/koordlet/runtimehooks/rule`:
`Register` + `UpdateRules`, and each hook's `ruleUpdateCb`).

`RuleUpdater(rules, node_slo, node, on_change)` hands the NodeSLO spec (`NodeSLOSpec` callback)
and the node (`NodeMetadata` callback) to every registered hook that parses a rule from them.
The `Rules` object is the one the hook server and the reconciler share, so a change is visible
to both at once; when a rule changed, `on_change` re-applies the hooks to every pod (upstream's
rule-update callback) instead of waiting for the next reconcile round.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.runtimehooks.registry import RUNTIME_HOOKS
from koordlet.runtimehooks.rule import Rules
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
        # A list, not a generator: every hook parses, even after one reported a change.
        return any([parse(self.rules, slo.spec) for hook in RUNTIME_HOOKS.values()
                    if (parse := hook.on_node_slo) is not None])

    def update_node_metadata(self) -> bool:
        node = self.node()
        if node is None:
            return False
        return any([parse(self.rules, node) for hook in RUNTIME_HOOKS.values()
                    if (parse := hook.on_node_metadata) is not None])

    def callback(self, rtype: RegisterType, target: object) -> None:
        """The statesinformer callback for `NodeSLOSpec` and `NodeMetadata`."""
        update = (self.update_node_slo if rtype is RegisterType.NODE_SLO_SPEC
                  else self.update_node_metadata)
        if update():
            logger.info("runtime hook rules changed on %s, re-applying to all pods", rtype)
            self.on_change()
