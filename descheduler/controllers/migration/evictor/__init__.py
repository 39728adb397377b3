"""How the MigrationController evicts a job's pod (upstream ``migration/evictor``)."""

from descheduler.controllers.migration.evictor.evictor import (
    DELETE,
    EVICTION,
    SOFT_EVICTION,
    EvictorInterpreter,
    Recorder,
    TooManyEvictionsError,
    trigger_and_reason,
)

__all__ = ["DELETE", "EVICTION", "SOFT_EVICTION", "EvictorInterpreter", "Recorder",
           "TooManyEvictionsError",
           "trigger_and_reason"]
