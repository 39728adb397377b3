"""Validated, ordered, de-duplicated cgroup writes: upstream `pkg/koordlet/resourceexecutor`.

`updater` builds one write per (cgroup dir, resource) with the update and merge functions
registered per resource in upstream's `updater.go`; `executor.ResourceUpdateExecutor` applies
them with a cache of the last value written and, for trees of writes, widens parents before
children and narrows children before parents (`leveled_update_batch`); `reader.CgroupReader`
reads values back in v1 units on either cgroup version, for the strategies and for the metric
collectors' per-tick reads.
"""
