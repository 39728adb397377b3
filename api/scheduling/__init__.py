"""The ``scheduling.koordinator.sh`` API group (upstream `apis/scheduling`)."""
