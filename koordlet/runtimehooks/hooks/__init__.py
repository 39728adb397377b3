"""The hooks and the stages they run in (upstream `pkg/koordlet/runtimehooks/hooks`)."""
