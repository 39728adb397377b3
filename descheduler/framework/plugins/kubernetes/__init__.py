"""The sigs.k8s.io/descheduler v0.35.1 Deschedule and Balance plugins koordinator wraps
(koordinator ``pkg/descheduler/framework/plugins/kubernetes``): upstream's policies, evicting
through the profile's evictor, so their evictions become PodMigrationJobs under the
MigrationController."""

from descheduler.framework.plugins.kubernetes.pod_life_time import PodLifeTime
from descheduler.framework.plugins.kubernetes.remove_duplicates import RemoveDuplicates
from descheduler.framework.plugins.kubernetes.remove_failed_pods import RemoveFailedPods
from descheduler.framework.plugins.kubernetes.remove_pods_having_too_many_restarts import (
    RemovePodsHavingTooManyRestarts,
)
from descheduler.framework.plugins.kubernetes.remove_pods_violating_inter_pod_anti_affinity import (  # noqa: E501
    RemovePodsViolatingInterPodAntiAffinity,
)
from descheduler.framework.plugins.kubernetes.remove_pods_violating_node_affinity import (
    RemovePodsViolatingNodeAffinity,
)
from descheduler.framework.plugins.kubernetes.remove_pods_violating_node_taints import (
    RemovePodsViolatingNodeTaints,
)
from descheduler.framework.plugins.kubernetes.remove_pods_violating_topology_spread_constraint import (  # noqa: E501
    RemovePodsViolatingTopologySpreadConstraint,
)

__all__ = [
    "PodLifeTime", "RemoveDuplicates", "RemoveFailedPods", "RemovePodsHavingTooManyRestarts",
    "RemovePodsViolatingInterPodAntiAffinity", "RemovePodsViolatingNodeAffinity",
    "RemovePodsViolatingNodeTaints", "RemovePodsViolatingTopologySpreadConstraint",
]
