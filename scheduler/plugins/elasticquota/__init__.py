"""Koordinator's ElasticQuota plugin (koordinator ``pkg/scheduler/plugins/elasticquota``):
the quota tree (``core``), the plugin (``elasticquota``), its informer handlers and its
preemption policy."""

from scheduler.plugins.elasticquota.elasticquota import NAME, ElasticQuota

__all__ = ["NAME", "ElasticQuota"]
