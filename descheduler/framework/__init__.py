"""koord-descheduler's framework (koordinator ``pkg/descheduler/framework``): plugin kinds, the
handle plugins get, the evictor with its limiter, the registry and the per-profile runtime."""
