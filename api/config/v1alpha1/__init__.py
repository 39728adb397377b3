"""``config.koordinator.sh/v1alpha1`` (upstream `apis/config/v1alpha1`)."""

from api.config.v1alpha1.cluster_colocation_profile import ClusterColocationProfile

GROUP = "config.koordinator.sh"
VERSION = "v1alpha1"

__all__ = ["GROUP", "VERSION", "ClusterColocationProfile"]
