"""DefaultPreemption and the preemption evaluator (kubernetes
``pkg/scheduler/framework/plugins/defaultpreemption`` and ``framework/preemption``)."""

from scheduler.framework.plugins.defaultpreemption.default_preemption import DefaultPreemption

__all__ = ["DefaultPreemption"]
