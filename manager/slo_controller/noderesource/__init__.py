"""The noderesource controller (upstream `pkg/slo-controller/noderesource`): batch and mid
resources of every node in ``status.capacity`` and ``status.allocatable``.

Modules: ``framework`` (plugin stages, NodeResource), ``inputs`` (capacity, reservations,
usages), ``batchresource`` and ``midresource`` (the formulas), ``numazone`` (batch per NUMA
zone on the NodeResourceTopology), ``cpunormalization`` and ``resourceamplification`` (the
ratio annotations), ``deviceresource`` (GPU/RDMA from the Device CR), ``resourcesync``
(writing and diffing), ``plugins`` (registration list), ``calculator`` (the pure reconcile)
and ``controller`` (informers, workqueue, API writes).
"""
