"""An upstream-style DeschedulerConfiguration enabling every wrapped sigs.k8s.io/descheduler
plugin with args loads, gets typed and defaulted args, and builds a working profile."""

from __future__ import annotations

import pytest

from descheduler.apis.config import DeschedulerConfigError, load_descheduler_config
from descheduler.apis.config.args import (
    PodLifeTimeArgs,
    RemoveDuplicatesArgs,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.plugins import kubernetes
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.runtime import Framework
from descheduler.framework.testing import FakeClient, listers, node, pod

CONFIG = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
profiles:
- name: wrapped
  pluginConfig:
  - name: DefaultEvictor
    args:
      evictFailedBarePods: true
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
      states: [Pending, CrashLoopBackOff]
      namespaces: {exclude: [kube-system]}
  - name: RemoveFailedPods
    args:
      reasons: [OOMKilled, NodeAffinity]
      exitCodes: [137]
      includingInitContainers: true
      excludeOwnerKinds: [Job]
      minPodLifetimeSeconds: 3600
  - name: RemovePodsHavingTooManyRestarts
    args:
      podRestartThreshold: 100
      includingInitContainers: true
      states: [CrashLoopBackOff]
  - name: RemovePodsViolatingNodeAffinity
    args:
      nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]
  - name: RemovePodsViolatingNodeTaints
    args:
      includePreferNoSchedule: true
      excludedTaints: [reserved, dedicated=special-user]
  - name: RemovePodsViolatingInterPodAntiAffinity
    args:
      labelSelector: {matchLabels: {app: web}}
  - name: RemoveDuplicates
    args:
      excludeOwnerKinds: [ReplicaSet]
  - name: RemovePodsViolatingTopologySpreadConstraint
    args:
      constraints: [DoNotSchedule, ScheduleAnyway]
  plugins:
    deschedule:
      enabled:
      - name: PodLifeTime
      - name: RemoveFailedPods
      - name: RemovePodsHavingTooManyRestarts
      - name: RemovePodsViolatingNodeAffinity
      - name: RemovePodsViolatingNodeTaints
      - name: RemovePodsViolatingInterPodAntiAffinity
    balance:
      enabled:
      - name: RemoveDuplicates
      - name: RemovePodsViolatingTopologySpreadConstraint
    evict:
      disabled: [{name: "*"}]
      enabled: [{name: DefaultEvictor}]
    filter:
      disabled: [{name: "*"}]
      enabled: [{name: DefaultEvictor}]
"""


def test_every_wrapped_plugin_loads_and_runs() -> None:
    config = load_descheduler_config(CONFIG, source="wrapped.yaml")
    [profile] = config.profiles
    args = profile.plugin_args()
    lifetime = args["PodLifeTime"]
    assert isinstance(lifetime, PodLifeTimeArgs)
    assert lifetime.max_pod_life_time_seconds == 86400
    assert isinstance(args["RemoveDuplicates"], RemoveDuplicatesArgs)
    spread = args["RemovePodsViolatingTopologySpreadConstraint"]
    assert isinstance(spread, RemovePodsViolatingTopologySpreadConstraintArgs)
    assert spread.topology_balance_node_fit is True

    client = FakeClient()
    # n1 carries a NoSchedule taint p1 does not tolerate
    n1 = node("n1")
    n1["spec"]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    nodes = [n1, node("n2")]
    framework = Framework(profile, in_tree_registry(), listers(nodes, [pod("p1", 100, 0, "n1")]),
                          client, EvictionLimiter())
    assert [type(p) for p in framework.deschedule_plugins] == [
        kubernetes.PodLifeTime, kubernetes.RemoveFailedPods,
        kubernetes.RemovePodsHavingTooManyRestarts, kubernetes.RemovePodsViolatingNodeAffinity,
        kubernetes.RemovePodsViolatingNodeTaints,
        kubernetes.RemovePodsViolatingInterPodAntiAffinity]
    assert [type(p) for p in framework.balance_plugins] == [
        kubernetes.RemoveDuplicates, kubernetes.RemovePodsViolatingTopologySpreadConstraint]
    assert framework.run_deschedule_plugins(nodes).ok
    assert framework.run_balance_plugins(nodes).ok
    assert client.evicted() == ["default/p1"]


def test_wrapped_args_errors_name_the_field() -> None:
    bad = CONFIG.replace("podRestartThreshold: 100", "podRestartThreshold: 0").replace(
        "constraints: [DoNotSchedule, ScheduleAnyway]", "constraints: [Sometimes]")
    with pytest.raises(DeschedulerConfigError) as info:
        load_descheduler_config(bad, source="wrapped.yaml")
    message = str(info.value)
    assert "profiles[0].pluginConfig[3].args.podRestartThreshold: invalid " \
        "PodsHavingTooManyRestarts threshold" in message
    assert "profiles[0].pluginConfig[8].args.constraints[0]: unsupported value 'Sometimes'" \
        in message
