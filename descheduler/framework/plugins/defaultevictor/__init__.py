"""DefaultEvictor: filter and evict plugin (see ``default_evictor.py``)."""

from descheduler.framework.plugins.defaultevictor.default_evictor import (
    DefaultEvictor,
    EvictorFilter,
)

__all__ = ["DefaultEvictor", "EvictorFilter"]
