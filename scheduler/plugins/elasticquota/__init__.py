"""Koordinator's ElasticQuota plugin (koordinator ``pkg/scheduler/plugins/elasticquota``):
the quota tree (``core``), one per quota tree under MultiQuotaTree (``managers``), the plugin
(``elasticquota``), its informer handlers, its preemption policy, the quota status writer
(``controller``) and the over-use revocation controller (``quota_overuse_revoke``)."""

from scheduler.plugins.elasticquota.elasticquota import NAME, ElasticQuota

__all__ = ["NAME", "ElasticQuota"]
