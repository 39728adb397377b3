"""The plugin registry: every plugin koord-scheduler can run, by its upstream name.

Corresponds to upstream ``cmd/koord-scheduler/main.go`` (``app.WithPlugin(...)`` for each
Koordinator plugin) on top of kube-scheduler's in-tree registry
(``pkg/scheduler/framework/plugins/registry.go``). This is the one place plugins are
registered, besides the out-of-tree plugins of ``--plugin-module``
(``scheduler/frameworkext/outoftree.py``); a configuration naming anything else fails at
start-up. Each plugin declares the extension points it serves in its own module, by the
interface bases its class subclasses (``scheduler/framework/registry.py``).

``NOT_YET_IMPLEMENTED`` lists upstream plugins that configurations may name (upstream's
shipped scheduler-config.yaml enables several) but that this implementation does not have yet:
they are left out of the profile with a warning instead of failing, so that upstream's files
load unchanged. Each entry says what is missing.
"""

from __future__ import annotations

from scheduler.framework.interface import Plugin
from scheduler.framework.plugins.defaultbinder import DefaultBinder
from scheduler.framework.plugins.defaultpreemption import DefaultPreemption
from scheduler.framework.plugins.interpodaffinity import InterPodAffinity
from scheduler.framework.plugins.nodeaffinity import NodeAffinity
from scheduler.framework.plugins.nodename import NodeName
from scheduler.framework.plugins.nodeports import NodePorts
from scheduler.framework.plugins.noderesources import BalancedAllocation, Fit
from scheduler.framework.plugins.nodeunschedulable import NodeUnschedulable
from scheduler.framework.plugins.podtopologyspread import PodTopologySpread
from scheduler.framework.plugins.queuesort import PrioritySort
from scheduler.framework.plugins.schedulinggates import SchedulingGates
from scheduler.framework.plugins.tainttoleration import TaintToleration
from scheduler.framework.registry import register
from scheduler.plugins.coscheduling import Coscheduling
from scheduler.plugins.elasticquota import ElasticQuota
from scheduler.plugins.loadaware import LoadAwareScheduling
from scheduler.plugins.reservation import Reservation

IN_TREE: tuple[type[Plugin], ...] = (
    SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
    NodePorts, Fit, BalancedAllocation, PodTopologySpread, InterPodAffinity, DefaultPreemption,
    DefaultBinder,
)

KOORDINATOR: tuple[type[Plugin], ...] = (
    LoadAwareScheduling, Coscheduling, ElasticQuota, Reservation,
)

_JOB_SCHEDULING = "Koordinator job-scheduling plugin, planned after LoadAwareScheduling"
_VOLUMES = "in-tree volume plugin; this scheduler does not model volumes yet"

NOT_YET_IMPLEMENTED: dict[str, str] = {
    "NodeNUMAResource": _JOB_SCHEDULING,
    "DeviceShare": _JOB_SCHEDULING,
    "SchedulingHint": _JOB_SCHEDULING,
    "DefaultPreBind": "Koordinator PreBind patch merger, needed once a plugin patches at PreBind",
    "NodeResourcesFitPlus": _JOB_SCHEDULING,
    "ScarceResourceAvoidance": _JOB_SCHEDULING,
    "VolumeRestrictions": _VOLUMES,
    "NodeVolumeLimits": _VOLUMES,
    "VolumeBinding": _VOLUMES,
    "VolumeZone": _VOLUMES,
    "ImageLocality": "in-tree image-locality score",
    "DynamicResources": "in-tree dynamic resource allocation (DRA)",
}


def new_registry() -> dict[str, type[Plugin]]:
    """Plugin name → plugin class, for every plugin this scheduler implements."""
    registry: dict[str, type[Plugin]] = {}
    register(registry, (*IN_TREE, *KOORDINATOR))
    return registry
