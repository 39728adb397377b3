"""The ``slo-controller-config`` ConfigMap (upstream `apis/configuration`, with the defaults
and resolution rules of `pkg/util/sloconfig` and `pkg/slo-controller`).

Modules: ``slo_controller_config`` (keys, ``SLOControllerConfig``, parsing the whole
ConfigMap), ``colocation`` (``colocation-config``), ``node_strategies`` (the four NodeSLO
strategy keys), ``host_application``, ``cpu_normalization``, ``resource_amplification``,
``profile`` (node selection) and ``merge`` (Go's MergeCfg semantics).
"""

from api.configuration.colocation import (
    CalculatePolicy,
    ColocationCfg,
    ColocationStrategy,
    NodeColocationCfg,
    colocation_strategy_problems,
    default_colocation_cfg,
    default_colocation_strategy,
    is_colocation_strategy_valid,
)
from api.configuration.cpu_normalization import (
    CPUNormalizationCfg,
    CPUNormalizationStrategy,
    ModelRatioCfg,
    NodeCPUNormalizationCfg,
)
from api.configuration.host_application import HostApplicationCfg, NodeHostApplicationCfg
from api.configuration.merge import go_marshal, merge_cfg
from api.configuration.node_strategies import (
    CPUBurstCfg,
    NodeCPUBurstCfg,
    NodeResourceQOSStrategy,
    NodeResourceThresholdStrategy,
    NodeSystemStrategy,
    ResourceQOSCfg,
    ResourceThresholdCfg,
    SystemCfg,
)
from api.configuration.profile import NodeCfgProfile, NodeSelector
from api.configuration.resource_amplification import (
    NodeResourceAmplificationCfg,
    ResourceAmplificationCfg,
    ResourceAmplificationStrategy,
)
from api.configuration.slo_controller_config import (
    COLOCATION_CONFIG_KEY,
    CONFIG_NAMESPACE,
    CPU_BURST_CONFIG_KEY,
    CPU_NORMALIZATION_CONFIG_KEY,
    HOST_APPLICATION_CONFIG_KEY,
    RESOURCE_AMPLIFICATION_CONFIG_KEY,
    RESOURCE_QOS_CONFIG_KEY,
    RESOURCE_THRESHOLD_CONFIG_KEY,
    SLO_CTRL_CONFIG_MAP,
    SYSTEM_CONFIG_KEY,
    SLOControllerConfig,
    parse_slo_controller_config,
    parse_slo_controller_config_lenient,
)

__all__ = [
    "COLOCATION_CONFIG_KEY",
    "CONFIG_NAMESPACE", "CPU_BURST_CONFIG_KEY", "CPU_NORMALIZATION_CONFIG_KEY",
    "HOST_APPLICATION_CONFIG_KEY", "LABEL_CPU_RECLAIM_RATIO",
    "LABEL_MID_STATIC_CPU_RESERVED_RATIO",
    "RESOURCE_AMPLIFICATION_CONFIG_KEY",
    "RESOURCE_QOS_CONFIG_KEY", "RESOURCE_THRESHOLD_CONFIG_KEY", "SLO_CTRL_CONFIG_MAP",
    "SYSTEM_CONFIG_KEY", "CPUBurstCfg", "CPUNormalizationCfg", "CPUNormalizationStrategy",
    "CalculatePolicy", "ColocationCfg", "ColocationStrategy", "HostApplicationCfg",
    "ModelRatioCfg", "NodeCPUBurstCfg", "NodeCPUNormalizationCfg", "NodeCfgProfile",
    "NodeColocationCfg", "NodeHostApplicationCfg", "NodeResourceAmplificationCfg",
    "NodeResourceQOSStrategy", "NodeResourceThresholdStrategy", "NodeSelector",
    "NodeSystemStrategy", "ResourceAmplificationCfg", "ResourceAmplificationStrategy",
    "ResourceQOSCfg", "ResourceThresholdCfg", "SLOControllerConfig", "SystemCfg",
    "colocation_strategy_problems", "default_colocation_cfg", "default_colocation_strategy",
    "go_marshal", "is_colocation_strategy_valid", "merge_cfg", "parse_slo_controller_config",
    "parse_slo_controller_config_lenient",
]
