"""koord-descheduler's controllers (upstream ``pkg/descheduler/controllers``)."""
