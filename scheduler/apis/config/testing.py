"""Test helpers: which extension points each plugin implements, as a stand-in registry.

The framework answers ``implements`` from its plugin classes; tests of the configuration use
this table instead (kube-scheduler v1.35's in-tree plugins, and Koordinator's as each one's
upstream ``pkg/scheduler/plugins/<name>`` implements the framework interfaces).
"""

from __future__ import annotations

PLUGIN_POINTS: dict[str, frozenset[str]] = {name: frozenset(points.split()) for name, points in {
    "SchedulingGates": "preEnqueue",
    "PrioritySort": "queueSort",
    "NodeUnschedulable": "filter",
    "NodeName": "filter",
    "TaintToleration": "filter preScore score",
    "NodeAffinity": "preFilter filter preScore score",
    "NodePorts": "preFilter filter",
    "NodeResourcesFit": "preFilter filter preScore score",
    "VolumeRestrictions": "preFilter filter",
    "NodeVolumeLimits": "preFilter filter",
    "VolumeBinding": "preFilter filter reserve preBind preScore score",
    "VolumeZone": "preFilter filter",
    "PodTopologySpread": "preFilter filter preScore score",
    "InterPodAffinity": "preFilter filter preScore score",
    "DynamicResources": "preEnqueue preFilter filter postFilter reserve preBind",
    "DefaultPreemption": "postFilter",
    "NodeResourcesBalancedAllocation": "preScore score",
    "ImageLocality": "score",
    "DefaultBinder": "bind",
    "LoadAwareScheduling": "preFilter filter score reserve",
    "NodeNUMAResource": "preFilter filter preScore score reserve preBind",
    "Reservation": "preFilter filter postFilter preScore score reserve preBind bind",
    "ElasticQuota": "preFilter postFilter reserve",
    "Coscheduling": "preEnqueue preFilter postFilter preScore score reserve permit preBind "
                    "postBind",
    "DeviceShare": "preFilter filter preScore score reserve preBind",
    "NodeResourcesFitPlus": "preScore score",
    "ScarceResourceAvoidance": "preScore score",
    "DefaultPreBind": "preBind",
    "SchedulingHint": "preFilter",
}.items()}


def implements(plugin: str, point: str) -> bool:
    """Whether ``plugin`` extends ``point`` according to PLUGIN_POINTS (unknown: never)."""
    return point in PLUGIN_POINTS.get(plugin, frozenset())
