"""The PodGroup status controller (koordinator
``pkg/scheduler/plugins/coscheduling/controller``)."""
