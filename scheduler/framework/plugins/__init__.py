"""In-tree kube-scheduler plugins (kubernetes ``pkg/scheduler/framework/plugins``)."""
