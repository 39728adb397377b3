"""``scheduling.koordinator.sh/v1alpha1`` (upstream `apis/scheduling/v1alpha1`)."""

from api.scheduling.v1alpha1.device import Device, DeviceInfo

__all__ = ["Device", "DeviceInfo"]
