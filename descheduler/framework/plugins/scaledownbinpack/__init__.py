"""ScaleDownBinPack: ranks pods so scaling workloads down empties whole nodes."""

from descheduler.framework.plugins.scaledownbinpack.scale_down_binpack import ScaleDownBinPack

__all__ = ["ScaleDownBinPack"]
