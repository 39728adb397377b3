"""Shared machinery of all components: the counterpart of upstream's `pkg/` helpers
(client, informers, workqueue, controller runner, leader election, feature gates, metrics and
health server, logging, util).
"""
