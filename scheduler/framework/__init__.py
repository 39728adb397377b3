"""koord-scheduler's scheduling framework (kube-scheduler ``pkg/scheduler/framework`` and
``pkg/scheduler/backend``): plugin interfaces, cycle state, cache, snapshot, queue, runtime."""
