"""The ``analysis.koordinator.sh`` API group (upstream `apis/analysis`)."""
