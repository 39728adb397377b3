"""koord-descheduler's configuration: DeschedulerConfiguration and its plugins' args.

Corresponds to Koordinator ``pkg/descheduler/apis/config`` (``v1alpha2`` types, defaults,
default plugins, validation). What the descheduler uses:

* ``load_descheduler_config(text, source)`` → the effective ``DeschedulerConfiguration``, or
  ``DeschedulerConfigError`` naming the source and each bad field;
* ``DeschedulerProfile.plugins`` (merged with the defaults) and ``plugin_args()``;
* ``ARGS_KINDS`` → plugin name → args model; ``PLUGIN_POINTS`` → the in-tree plugins.
"""

from descheduler.apis.config.args import (
    ARGS_KINDS,
    DefaultEvictorArgs,
    LoadAnomalyCondition,
    LowNodeLoadArgs,
    LowNodeLoadNodePool,
    MigrationControllerArgs,
    Namespaces,
    RemovePodsViolatingNodeAffinityArgs,
)
from descheduler.apis.config.loader import (
    DeschedulerConfigError,
    decode_descheduler_config,
    load_descheduler_config,
)
from descheduler.apis.config.registry import PLUGIN_POINTS
from descheduler.apis.config.types import (
    KIND,
    V1ALPHA2,
    DeschedulerConfiguration,
    DeschedulerProfile,
    Plugin,
    PluginConfig,
    Plugins,
    PluginSet,
)

__all__ = [
    "ARGS_KINDS", "KIND", "PLUGIN_POINTS", "V1ALPHA2", "DefaultEvictorArgs",
    "DeschedulerConfigError", "DeschedulerConfiguration", "DeschedulerProfile",
    "LoadAnomalyCondition", "LowNodeLoadArgs", "LowNodeLoadNodePool", "MigrationControllerArgs",
    "Namespaces", "Plugin", "PluginConfig", "PluginSet", "Plugins",
    "RemovePodsViolatingNodeAffinityArgs", "decode_descheduler_config", "load_descheduler_config",
]
