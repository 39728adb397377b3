"""The ``config.koordinator.sh`` API group (upstream `apis/config`)."""
