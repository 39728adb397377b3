"""QoS manager: upstream `pkg/koordlet/qosmanager`.

`framework` holds the context every strategy gets and the loop that runs each enabled strategy
on its own interval; `register` is the one list of strategies; `cpusuppress` squeezes the
node-level BE cgroup when prod usage leaves less CPU than NodeSLO's threshold allows.
"""
