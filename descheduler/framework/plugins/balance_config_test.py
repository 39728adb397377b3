"""A configuration enabling every balance plugin of this package with args loads through
``load_descheduler_config`` (typed, defaulted, validated args) and builds a framework whose
plugins run."""

from __future__ import annotations

import pytest

from descheduler.apis.config import DeschedulerConfigError, load_descheduler_config
from descheduler.apis.config.args import (
    CustomPriorityArgs,
    FragmentationAwareArgs,
    HighNodeUtilizationArgs,
    LowNodeUtilizationArgs,
    ScaleDownBinPackArgs,
)
from descheduler.framework.limiter import EvictionLimiter
from descheduler.framework.registry import in_tree_registry
from descheduler.framework.runtime import Framework
from descheduler.framework.testing import FakeClient, listers, node, pod

CONFIG = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerConfiguration
profiles:
- name: balance
  plugins:
    balance:
      enabled:
      - name: HighNodeUtilization
      - name: LowNodeUtilization
      - name: CustomPriority
      - name: FragmentationAware
      - name: ScaleDownBinPack
    evict:
      enabled: [{name: DefaultEvictor}]
      disabled: [{name: MigrationController}]
    filter:
      enabled: [{name: DefaultEvictor}]
      disabled: [{name: MigrationController}]
  pluginConfig:
  - name: HighNodeUtilization
    args:
      thresholds: {cpu: 20, pods: 20}
      evictableNamespaces: {exclude: [kube-system]}
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 70, memory: 70}
      numberOfNodes: 1
  - name: CustomPriority
    args:
      mode: DrainNode
      evictionOrder:
      - name: on-demand
        nodeSelector: {matchLabels: {billing: on-demand}}
      - name: spot
        nodeSelector: {matchLabels: {billing: spot}}
  - name: FragmentationAware
    args:
      imbalanceThreshold: 0.3
  - name: ScaleDownBinPack
    args:
      strategy: EvictDirectly
      maxPodsToEvict: 3
      podSelectors:
      - name: web
        selector: {matchLabels: {app: web}}
"""


def test_every_balance_plugin_loads_with_its_args_and_runs() -> None:
    config = load_descheduler_config(CONFIG, source="balance.yaml")
    [profile] = config.profiles
    args = profile.plugin_args()
    assert isinstance(args["HighNodeUtilization"], HighNodeUtilizationArgs)
    low = args["LowNodeUtilization"]
    assert isinstance(low, LowNodeUtilizationArgs) and low.number_of_nodes == 1
    custom = args["CustomPriority"]
    assert isinstance(custom, CustomPriorityArgs)
    assert (custom.mode, custom.node_fit) == ("DrainNode", True)
    fragmentation = args["FragmentationAware"]
    assert isinstance(fragmentation, FragmentationAwareArgs)
    assert (fragmentation.imbalance_threshold, fragmentation.min_improvement_threshold) == (
        0.3, 0.02)
    binpack = args["ScaleDownBinPack"]
    assert isinstance(binpack, ScaleDownBinPackArgs)
    assert binpack.resource_weights == {"cpu": 1.0, "memory": 1.0}

    nodes = [node("n1", billing="on-demand"), node("n2", billing="spot")]
    pods = [pod("web", 400, 0, "n1", labels={"app": "web"})]
    client = FakeClient()
    framework = Framework(profile, in_tree_registry(), listers(nodes, pods), client,
                          EvictionLimiter())
    assert [p.name() for p in framework.balance_plugins] == [
        "HighNodeUtilization", "LowNodeUtilization", "CustomPriority", "FragmentationAware",
        "ScaleDownBinPack"]
    assert framework.run_balance_plugins(nodes).ok
    # Both nodes are under every utilisation threshold and web alone evens nothing out;
    # CustomPriority drains the on-demand node and ScaleDownBinPack evicts its ranked pod
    # (each plugin sees the listers as the pass began).
    assert client.evicted() == ["default/web", "default/web"]


@pytest.mark.parametrize("body, error", [
    ("  - name: HighNodeUtilization\n    args: {}\n",
     "profiles[0].pluginConfig[0].args.thresholds: no resource threshold is configured"),
    ("  - name: LowNodeUtilization\n    args: {thresholds: {cpu: 20}, "
     "targetThresholds: {cpu: 50}, metricsUtilization: {source: KubernetesMetrics}}\n",
     "profiles[0].pluginConfig[0].args.metricsUtilization: not supported"),
    ("  - name: ScaleDownBinPack\n    args: {strategy: EvictDirectly}\n",
     "profiles[0].pluginConfig[0].args.maxPodsToEvict: maxPodsToEvict must be positive"),
])
def test_invalid_args_fail_the_load_naming_the_field(body: str, error: str) -> None:
    text = ("apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"
            "profiles:\n- pluginConfig:\n" + body)
    with pytest.raises(DeschedulerConfigError) as info:
        load_descheduler_config(text, source="bad.yaml")
    assert error in str(info.value)
