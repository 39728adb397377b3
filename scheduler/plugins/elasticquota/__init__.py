"""Koordinator's ElasticQuota plugin (koordinator ``pkg/scheduler/plugins/elasticquota``).

Only the quota tree (``core``) exists so far; the plugin is not registered yet.
"""
