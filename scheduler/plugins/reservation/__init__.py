"""koord-scheduler's Reservation plugin (upstream ``pkg/scheduler/plugins/reservation``)."""
