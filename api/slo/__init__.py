"""The ``slo.koordinator.sh`` API group (upstream `apis/slo`): NodeMetric and NodeSLO."""
