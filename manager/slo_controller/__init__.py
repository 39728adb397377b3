"""koord-manager's slo-controller (upstream `pkg/slo-controller`): NodeMetric, NodeSLO and the
batch/mid resources of every node, driven by the ``slo-controller-config`` ConfigMap."""
