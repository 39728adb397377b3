"""Micro-benchmark of the ElasticQuota tree: ``python -m scheduler.plugins.elasticquota.bench``."""
