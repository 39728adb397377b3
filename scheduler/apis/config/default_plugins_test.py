"""Default plugins per apiVersion and kube-scheduler's mergePluginSet rules."""

from __future__ import annotations

from scheduler.apis.config.default_plugins import default_plugins, merge_plugin_set, merge_plugins
from scheduler.apis.config.types import V1, V1BETA2, V1BETA3, Plugin, Plugins, PluginSet


def plugin_set(enabled: list[str | tuple[str, int]], disabled: tuple[str, ...] = ()
               ) -> PluginSet:
    return PluginSet(
        enabled=[Plugin(name=p) if isinstance(p, str) else Plugin(name=p[0], weight=p[1])
                 for p in enabled],
        disabled=[Plugin(name=n) for n in disabled])


def entries(ps: PluginSet) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in ps.enabled]


def test_v1_defaults_are_multi_point_with_weights() -> None:
    plugins = default_plugins(V1)
    multi_point = dict(entries(plugins.multi_point))
    assert list(multi_point)[:2] == ["SchedulingGates", "PrioritySort"]
    assert list(multi_point)[-3:] == ["NodeResourcesBalancedAllocation", "ImageLocality",
                                      "DefaultBinder"]
    weights = [multi_point[n] for n in ("TaintToleration", "NodeAffinity", "PodTopologySpread",
                                        "InterPodAffinity", "NodeResourcesFit", "NodePorts")]
    assert weights == [3, 2, 2, 2, 1, None]
    names = list(multi_point)
    assert names.index("DynamicResources") == names.index("DefaultPreemption") - 1
    assert not {"EBSLimits", "GCEPDLimits", "AzureDiskLimits"} & set(names)
    assert plugins.filter.enabled == [] and plugins.score.enabled == []
    assert default_plugins(V1BETA3) == plugins


def test_v1beta2_defaults_are_per_point() -> None:
    plugins = default_plugins(V1BETA2)
    assert plugins.multi_point.enabled == []
    assert entries(plugins.queue_sort) == [("PrioritySort", None)]
    assert entries(plugins.bind) == [("DefaultBinder", None)]
    assert dict(entries(plugins.score)) == {
        "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1, "InterPodAffinity": 1,
        "NodeResourcesFit": 1, "NodeAffinity": 1, "PodTopologySpread": 2, "TaintToleration": 1}
    assert "TaintToleration" in dict(entries(plugins.filter))


def test_custom_plugins_follow_the_defaults() -> None:
    merged = merge_plugin_set(plugin_set(["A", "B"]), plugin_set(["X", "Y"]), keep_disabled=True)
    assert entries(merged) == [("A", None), ("B", None), ("X", None), ("Y", None)]


def test_star_drops_every_default() -> None:
    merged = merge_plugin_set(plugin_set(["A", "B"]), plugin_set(["B", "X"], ("*",)),
                              keep_disabled=True)
    assert entries(merged) == [("B", None), ("X", None)]
    assert [p.name for p in merged.disabled] == ["*"]


def test_disabled_default_is_dropped() -> None:
    merged = merge_plugin_set(plugin_set(["A", "B", "C"]), plugin_set([], ("B",)),
                              keep_disabled=False)
    assert entries(merged) == [("A", None), ("C", None)]
    assert merged.disabled == []


def test_reconfigured_default_is_replaced_in_place_with_the_users_weight() -> None:
    merged = merge_plugin_set(plugin_set([("A", 1), ("B", 1), ("C", 1)]),
                              plugin_set(["X", ("B", 7), "Y"]), keep_disabled=True)
    assert entries(merged) == [("A", 1), ("B", 7), ("C", 1), ("X", None), ("Y", None)]


def test_duplicate_custom_entries_are_kept_for_the_framework_to_refuse() -> None:
    merged = merge_plugin_set(plugin_set([]), plugin_set(["X", "X"]), keep_disabled=True)
    assert entries(merged) == [("X", None), ("X", None)]


def test_merge_plugins_without_custom_plugins_is_the_defaults() -> None:
    assert merge_plugins(V1, None) == default_plugins(V1)


def test_merge_plugins_keeps_disabled_lists_except_for_v1beta2() -> None:
    custom = Plugins(bind=plugin_set(["Mine"], ("*",)),
                     multi_point=plugin_set([], ("ImageLocality",)))
    v1 = merge_plugins(V1, custom)
    assert entries(v1.bind) == [("Mine", None)] and [p.name for p in v1.bind.disabled] == ["*"]
    assert "ImageLocality" not in dict(entries(v1.multi_point))
    v1beta2 = merge_plugins(V1BETA2, Plugins(bind=plugin_set(["Mine"], ("*",))))
    assert entries(v1beta2.bind) == [("Mine", None)] and v1beta2.bind.disabled == []
