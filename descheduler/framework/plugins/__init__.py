"""koord-descheduler's in-tree plugins (koordinator ``pkg/descheduler/framework/plugins``)."""
