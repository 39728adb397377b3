"""``resource-amplification-config``: per-resource allocatable amplification ratios.

Corresponds to ``ResourceAmplificationCfg``/``ResourceAmplificationStrategy`` in upstream
`apis/configuration/slo_controller_config.go` and the config handling of
`pkg/slo-controller/noderesource/plugins/resourceamplification` (default ``enable=false``;
node entries merged onto the cluster strategy; first matching entry wins). The ratios are
written into the node annotation ``node.koordinator.sh/resource-amplification-ratio``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.base import GoJSONModel
from api.configuration.merge import merge_cfg
from api.configuration.profile import NodeCfgProfile, first_matching


class ResourceAmplificationStrategy(GoJSONModel):
    """Whether amplification is on and the ratio per resource name (``cpu`` ...)."""

    enable: bool | None = None
    resource_amplification_ratio: dict[str, float] | None = None


class NodeResourceAmplificationCfg(ResourceAmplificationStrategy, NodeCfgProfile):
    """A ``nodeConfigs[]`` entry."""


def default_resource_amplification_strategy() -> ResourceAmplificationStrategy:
    return ResourceAmplificationStrategy(enable=False)


class ResourceAmplificationCfg(ResourceAmplificationStrategy):
    """The ``resource-amplification-config`` key."""

    node_configs: list[NodeResourceAmplificationCfg] | None = None

    @classmethod
    def default(cls) -> ResourceAmplificationCfg:
        return cls.model_validate(default_resource_amplification_strategy().to_dict())

    def resolve(self) -> ResourceAmplificationCfg:
        """Cluster strategy merged onto the defaults, node entries onto the cluster strategy."""
        cluster = merge_cfg(default_resource_amplification_strategy(), self)
        resolved = ResourceAmplificationCfg.model_validate(
            cluster.model_dump(by_alias=True, exclude_none=True))
        if self.node_configs is not None:
            resolved.node_configs = [
                NodeResourceAmplificationCfg.model_validate({
                    **entry.model_dump(by_alias=True, exclude_none=True,
                                       include={"name", "node_selector"}),
                    **merge_cfg(cluster, entry).model_dump(by_alias=True, exclude_none=True)})
                for entry in self.node_configs]
        return resolved

    def for_node(self, node: Mapping[str, Any]) -> ResourceAmplificationStrategy:
        """The strategy of a node: the first matching entry's, else the cluster one."""
        entry = first_matching(self.node_configs, node)
        return merge_cfg(ResourceAmplificationStrategy(), entry if entry is not None else self)


__all__ = [
    "NodeResourceAmplificationCfg", "ResourceAmplificationCfg", "ResourceAmplificationStrategy",
    "default_resource_amplification_strategy",
]
