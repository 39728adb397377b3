"""koord-descheduler's API types (upstream ``pkg/descheduler/apis``)."""
