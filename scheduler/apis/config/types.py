"""KubeSchedulerConfiguration and the types it is made of.

Corresponds to kube-scheduler's ``k8s.io/kube-scheduler/config/{v1beta2,v1beta3,v1}/types.go``
(with component-base's ``LeaderElectionConfiguration``, ``ClientConnectionConfiguration`` and
``DebuggingConfiguration``), as one model for every version: the fields a version lacks are
listed in ``FIELDS_NOT_IN_VERSION`` and refused when decoding a file of that version. Field
defaults are kube-scheduler's ``SetDefaults_KubeSchedulerConfiguration``; plugin defaults and
per-plugin args are applied by ``defaults.py``.

``podMaxInUnschedulablePodsDuration`` is a kube-scheduler flag, not a field of any version of
this type, so a file setting it is refused (unknown field).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializeAsAny, model_validator

from api.extension.payload import GoInt32, GoInt64
from pkg.client.config import ClientOptions
from pkg.leaderelection import config as election
from scheduler.apis.config.base import ConfigModel, DurationSeconds, PluginArgs
from scheduler.apis.config.extension_points import ExtensionPoint

GROUP = "kubescheduler.config.k8s.io"
V1BETA2 = f"{GROUP}/v1beta2"
V1BETA3 = f"{GROUP}/v1beta3"
V1 = f"{GROUP}/v1"
API_VERSIONS = (V1BETA2, V1BETA3, V1)
KIND = "KubeSchedulerConfiguration"

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# JSON paths ("[]" for every list item) of fields that only some versions have.
FIELDS_NOT_IN_VERSION: dict[str, tuple[str, ...]] = {
    V1BETA2: ("delayCacheUntilActive", "profiles[].percentageOfNodesToScore",
              "profiles[].plugins.multiPoint"),
    V1BETA3: ("healthzBindAddress", "metricsBindAddress"),
    V1: ("healthzBindAddress", "metricsBindAddress"),
}


class LeaderElectionConfiguration(ConfigModel):
    """component-base LeaderElectionConfiguration with kube-scheduler's defaults (an explicit
    zero duration or empty string also means the default)."""

    leader_elect: bool = True
    lease_duration: DurationSeconds = 15.0
    renew_deadline: DurationSeconds = 10.0
    retry_period: DurationSeconds = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"

    @model_validator(mode="after")
    def _defaults(self) -> LeaderElectionConfiguration:
        self.fill_zero("lease_duration", "renew_deadline", "retry_period", "resource_lock",
                       "resource_name", "resource_namespace")
        return self

    def runtime(self) -> election.LeaderElectionConfiguration:
        """What the component runner elects with (flags given on the command line go over
        it: ``pkg.leaderelection.config.config_from_args``)."""
        return election.LeaderElectionConfiguration(
            leader_elect=self.leader_elect, lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline, retry_period=self.retry_period,
            resource_lock=self.resource_lock, resource_name=self.resource_name,
            resource_namespace=self.resource_namespace)


class ClientConnectionConfiguration(ConfigModel):
    """component-base ClientConnectionConfiguration with kube-scheduler's own QPS and burst."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: GoInt32 = 100

    @model_validator(mode="after")
    def _defaults(self) -> ClientConnectionConfiguration:
        self.fill_zero("content_type", "qps", "burst")
        return self

    def client_options(self, user_agent: str, kubeconfig: str = "",
                       master: str = "") -> ClientOptions:
        """How to connect: ``--kubeconfig``/``--master`` (when given) over this section."""
        return ClientOptions(kubeconfig=kubeconfig or self.kubeconfig or None,
                             master=master or None, qps=self.qps, burst=self.burst,
                             user_agent=user_agent)


class Plugin(ConfigModel):
    """A plugin at an extension point; ``weight`` only matters at score (and multiPoint)."""

    name: str
    weight: GoInt32 | None = None


class PluginSet(ConfigModel):
    """Plugins enabled at a point (after the defaults), and defaults disabled (``"*"``: all)."""

    enabled: list[Plugin] = Field(default_factory=list)
    disabled: list[Plugin] = Field(default_factory=list)


class Plugins(ConfigModel):
    """One PluginSet per extension point, plus ``multiPoint`` (v1beta3 and v1)."""

    pre_enqueue: PluginSet = Field(default_factory=PluginSet)
    queue_sort: PluginSet = Field(default_factory=PluginSet)
    pre_filter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    post_filter: PluginSet = Field(default_factory=PluginSet)
    pre_score: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    pre_bind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    post_bind: PluginSet = Field(default_factory=PluginSet)
    multi_point: PluginSet = Field(default_factory=PluginSet)

    def get(self, point: ExtensionPoint | str) -> PluginSet:
        """The PluginSet of ``point`` (an ExtensionPoint or ``"multiPoint"``)."""
        return getattr(self, _PLUGINS_ATTRS[str(point)])

    def set(self, point: ExtensionPoint | str, plugin_set: PluginSet) -> None:
        setattr(self, _PLUGINS_ATTRS[str(point)], plugin_set)

    def names(self) -> list[str]:
        """Every plugin enabled anywhere, sorted (upstream ``pluginsNames``)."""
        return sorted({p.name for attr in _PLUGINS_ATTRS.values()
                       for p in getattr(self, attr).enabled})


# JSON name ("preFilter", "multiPoint") → attribute of Plugins.
_PLUGINS_ATTRS = {info.alias or name: name for name, info in Plugins.model_fields.items()}


class PluginConfig(ConfigModel):
    """Arguments for one plugin: typed for the plugins in ``ARGS_KINDS``, raw JSON otherwise."""

    name: str
    args: dict[str, Any] | SerializeAsAny[PluginArgs] | None = Field(
        default=None, union_mode="left_to_right")


class KubeSchedulerProfile(ConfigModel):
    """One scheduling profile, chosen by a pod's ``spec.schedulerName``."""

    scheduler_name: str | None = None
    percentage_of_nodes_to_score: GoInt32 | None = None
    plugins: Plugins | None = None
    plugin_config: list[PluginConfig] = Field(default_factory=list)

    def plugin_args(self) -> dict[str, Any]:
        """Plugin name → its args (typed where the kind is known), for building the plugins."""
        return {pc.name: pc.args for pc in self.plugin_config}


class ExtenderManagedResource(ConfigModel):
    name: str
    ignored_by_scheduler: bool = False


class ExtenderTLSConfig(ConfigModel):
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # []byte fields: base64 on the wire, kept as written.
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""


class Extender(ConfigModel):
    """A scheduler extender. Kept as configured; koord-scheduler does not call extenders."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    weight: GoInt64 = 0
    bind_verb: str = ""
    enable_https: bool = Field(False, alias="enableHTTPS")
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: DurationSeconds = 0.0
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = Field(default_factory=list)
    ignorable: bool = False


class KubeSchedulerConfiguration(ConfigModel):
    """The scheduler's configuration; after ``load_scheduler_config`` it is the effective one:
    defaulted, every profile's plugins merged with the defaults of its apiVersion, and every
    plugin with a known args kind given its (defaulted) args."""

    api_version: str = V1
    kind: str = KIND
    parallelism: GoInt32 = 16
    leader_election: LeaderElectionConfiguration = Field(
        default_factory=LeaderElectionConfiguration)
    client_connection: ClientConnectionConfiguration = Field(
        default_factory=ClientConnectionConfiguration)
    # v1beta2 only; deprecated there, and only empty or port 0 is valid.
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    enable_profiling: bool = True
    # Defaults to enableProfiling.
    enable_contention_profiling: bool | None = None
    # 0: adaptive (50% minus 1% per 125 nodes, at least 5%).
    percentage_of_nodes_to_score: GoInt32 = 0
    pod_initial_backoff_seconds: GoInt64 = 1
    pod_max_backoff_seconds: GoInt64 = 10
    profiles: list[KubeSchedulerProfile] = Field(default_factory=list)
    extenders: list[Extender] = Field(default_factory=list)
    delay_cache_until_active: bool = False

    @model_validator(mode="after")
    def _defaults(self) -> KubeSchedulerConfiguration:
        if self.enable_contention_profiling is None:
            self.enable_contention_profiling = self.enable_profiling
        return self

    def profile(self, scheduler_name: str) -> KubeSchedulerProfile | None:
        """The profile named ``scheduler_name``, or None."""
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)
