"""koord-scheduler's configuration API (upstream ``pkg/scheduler/apis``)."""
