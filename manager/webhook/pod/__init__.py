"""Pod admission webhooks (upstream ``pkg/webhook/pod``): ``/mutate-pod`` and
``/validate-pod``, ``/validate-pod-binding``."""
