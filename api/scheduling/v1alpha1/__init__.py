"""``scheduling.koordinator.sh/v1alpha1`` (upstream `apis/scheduling/v1alpha1`).

The kinds are re-exported here; their nested types live in the per-kind modules.
"""

from api.scheduling.v1alpha1.cluster_network_topology import ClusterNetworkTopology
from api.scheduling.v1alpha1.device import Device, DeviceInfo
from api.scheduling.v1alpha1.pod_migration_job import PodMigrationJob
from api.scheduling.v1alpha1.reservation import Reservation
from api.scheduling.v1alpha1.schedule_explanation import ScheduleExplanation

GROUP = "scheduling.koordinator.sh"
VERSION = "v1alpha1"

__all__ = [
    "GROUP", "VERSION", "ClusterNetworkTopology", "Device", "DeviceInfo", "PodMigrationJob",
    "Reservation", "ScheduleExplanation",
]
