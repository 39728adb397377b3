"""DeschedulerConfiguration and the types it is made of.

Corresponds to Koordinator ``pkg/descheduler/apis/config/v1alpha2/types.go`` (with
component-base's ``LeaderElectionConfiguration``, ``ClientConnectionConfiguration`` and the
inlined ``DebuggingConfiguration``). Field defaults are upstream's
``SetDefaults_DeschedulerConfiguration``; profiles, plugins and plugin args are defaulted by
``defaults.py``. The building blocks (strict models, durations, client connection) are the
scheduler configuration's.
"""

from __future__ import annotations

from typing import Annotated, Any

from annotated_types import Interval
from pydantic import Field, SerializeAsAny, Strict, model_validator

from api.meta import LabelSelector
from scheduler.apis.config.base import ConfigModel, DurationSeconds, PluginArgs
from scheduler.apis.config.types import (
    ClientConnectionConfiguration,
)
from scheduler.apis.config.types import (
    LeaderElectionConfiguration as SchedulerLeaderElection,
)

V1ALPHA2 = "descheduler/v1alpha2"
KIND = "DeschedulerConfiguration"

DEFAULT_PROFILE_NAME = "koord-descheduler"
# config.DefaultInsecureDeschedulerPort: healthz and metrics.
DEFAULT_INSECURE_PORT = 10251

# Go's uint (64 bits).
GoUint = Annotated[int, Strict(), Interval(ge=0, le=2**64 - 1)]


class LeaderElectionConfiguration(SchedulerLeaderElection):
    """component-base LeaderElectionConfiguration with the descheduler's lease."""

    resource_name: str = "koord-descheduler"
    resource_namespace: str = "koordinator-system"


class Plugin(ConfigModel):
    name: str = ""


class PluginSet(ConfigModel):
    """Plugins enabled at a point (after the defaults), and defaults disabled (``"*"``: all)."""

    enabled: list[Plugin] = Field(default_factory=list)
    disabled: list[Plugin] = Field(default_factory=list)

    def names(self) -> list[str]:
        return [p.name for p in self.enabled]


class Plugins(ConfigModel):
    """One PluginSet per kind of descheduler plugin."""

    deschedule: PluginSet = Field(default_factory=PluginSet)
    balance: PluginSet = Field(default_factory=PluginSet)
    evict: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)

    def get(self, point: str) -> PluginSet:
        """The PluginSet of ``point`` (one of EXTENSION_POINTS)."""
        plugin_set: PluginSet = getattr(self, point)
        return plugin_set

    def names(self) -> list[str]:
        """Every plugin enabled anywhere, sorted (upstream ``pluginsNames``)."""
        return sorted({name for point in EXTENSION_POINTS for name in self.get(point).names()})


# The extension points, in the order upstream lists them (JSON names = attribute names).
EXTENSION_POINTS: tuple[str, ...] = tuple(Plugins.model_fields)


class PluginConfig(ConfigModel):
    """Arguments for one plugin: typed for the plugins in ``ARGS_KINDS``, raw JSON otherwise."""

    name: str
    args: dict[str, Any] | SerializeAsAny[PluginArgs] | None = Field(
        default=None, union_mode="left_to_right")


class DeschedulerProfile(ConfigModel):
    """One descheduling profile: its plugins, their args, and the nodes it works on."""

    name: str = ""
    plugin_config: list[PluginConfig] = Field(default_factory=list)
    plugins: Plugins | None = None
    node_selector: LabelSelector | None = None

    def plugin_args(self) -> dict[str, Any]:
        """Plugin name → its args (typed where the kind is known), for building the plugins."""
        return {pc.name: pc.args for pc in self.plugin_config}


class DeschedulerConfiguration(ConfigModel):
    """The descheduler's configuration; after ``load_descheduler_config`` it is the effective
    one: defaulted, every profile's plugins merged with the defaults, and every enabled plugin
    with a known args kind given its (defaulted) args."""

    api_version: str = V1ALPHA2
    kind: str = KIND
    leader_election: LeaderElectionConfiguration = Field(
        default_factory=LeaderElectionConfiguration)
    client_connection: ClientConnectionConfiguration = Field(
        default_factory=ClientConnectionConfiguration)
    enable_profiling: bool = True
    # Defaults to true when profiling is enabled.
    enable_contention_profiling: bool | None = None
    # Deprecated; defaulted to 0.0.0.0:10251 (see defaults.bind_address).
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    # 0: run one pass and stop.
    descheduling_interval: DurationSeconds = 0.0
    dry_run: bool = False
    profiles: list[DeschedulerProfile] = Field(default_factory=list)
    # Cluster-wide node filter; None: every node.
    node_selector: LabelSelector | None = None
    # None: unlimited.
    max_no_of_pods_to_evict_per_node: GoUint | None = None
    max_no_of_pods_to_evict_per_namespace: GoUint | None = None
    max_no_of_pods_to_evict_total: GoUint | None = None

    @model_validator(mode="after")
    def _defaults(self) -> DeschedulerConfiguration:
        if self.enable_profiling and self.enable_contention_profiling is None:
            self.enable_contention_profiling = True
        return self

    def profile(self, name: str) -> DeschedulerProfile | None:
        """The profile named ``name``, or None."""
        return next((p for p in self.profiles if p.name == name), None)
