"""koordlet runtime hooks (upstream `pkg/koordlet/runtimehooks`).

The RuntimeHookService gRPC server (`server.py`, upstream `proxyserver/`), the request view and
the results hooks return (`protocol.py`, upstream `protocol/`), node-wide rules (`rule.py`) kept
current by `rule_update.py`, the hooks (`hooks/`, each declaring its stages, levels and rule) and
their registry (`registry.py`), the reconciler mode's planner (`reconciler.py`), and the
writer that puts hook results on cgroups through the resource executor plus the reconciler loop
(`cgroupapply.py`).
"""
