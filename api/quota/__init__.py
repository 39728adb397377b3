"""The ``quota.koordinator.sh`` API group (upstream `apis/quota`)."""
