"""The runtime hooks (upstream `pkg/koordlet/runtimehooks/hooks`): one module per hook, declaring
its stages, reconciler levels and rule; `hooks` is what they declare and how a stage runs them."""
