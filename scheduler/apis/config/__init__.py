"""koord-scheduler's configuration: KubeSchedulerConfiguration and every plugin's args.

Corresponds to kube-scheduler's ``pkg/scheduler/apis/config`` (types, defaults, default plugins,
validation) and Koordinator's ``pkg/scheduler/apis/config`` (its plugins' args). What the
framework uses:

* ``load_scheduler_config(path_or_text)`` → the effective ``KubeSchedulerConfiguration``, or
  ``SchedulerConfigError`` naming the file and each bad field;
* ``expand_profile_plugins(profile, implements)`` → the plugins at each ``ExtensionPoint``;
* ``KubeSchedulerProfile.plugin_args()`` → plugin name → its args;
* ``ARGS_KINDS`` → plugin name → args model, for the plugins whose args kind is known.
"""

from scheduler.apis.config.base import PluginArgs
from scheduler.apis.config.errors import FieldError, SchedulerConfigError
from scheduler.apis.config.extension_points import MULTI_POINT, ExtensionPoint, PluginRef
from scheduler.apis.config.koord_args import (
    CoschedulingArgs,
    DeviceShareArgs,
    ElasticQuotaArgs,
    LoadAwareSchedulingArgs,
    NodeNUMAResourceArgs,
    NodeResourcesFitPlusArgs,
    ReservationArgs,
    ScarceResourceAvoidanceArgs,
    SchedulingHintArgs,
)
from scheduler.apis.config.kube_args import (
    DefaultPreemptionArgs,
    DynamicResourcesArgs,
    InterPodAffinityArgs,
    NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    PodTopologySpreadArgs,
    VolumeBindingArgs,
)
from scheduler.apis.config.loader import decode_scheduler_config, load_scheduler_config
from scheduler.apis.config.multipoint import expand_profile_plugins
from scheduler.apis.config.plugin_args import ARGS_KINDS
from scheduler.apis.config.types import (
    API_VERSIONS,
    V1,
    V1BETA2,
    V1BETA3,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)

__all__ = [
    "API_VERSIONS", "ARGS_KINDS", "MULTI_POINT", "V1", "V1BETA2", "V1BETA3", "CoschedulingArgs",
    "DefaultPreemptionArgs", "DeviceShareArgs", "DynamicResourcesArgs", "ElasticQuotaArgs",
    "ExtensionPoint", "FieldError", "InterPodAffinityArgs", "KubeSchedulerConfiguration",
    "KubeSchedulerProfile", "LoadAwareSchedulingArgs", "NodeAffinityArgs", "NodeNUMAResourceArgs",
    "NodeResourcesBalancedAllocationArgs", "NodeResourcesFitArgs", "NodeResourcesFitPlusArgs",
    "Plugin", "PluginArgs", "PluginConfig", "PluginRef", "PluginSet", "Plugins",
    "PodTopologySpreadArgs", "ReservationArgs", "ScarceResourceAvoidanceArgs",
    "SchedulerConfigError", "SchedulingHintArgs", "VolumeBindingArgs", "decode_scheduler_config",
    "expand_profile_plugins", "load_scheduler_config",
]
