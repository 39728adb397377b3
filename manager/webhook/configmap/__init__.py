"""ConfigMap admission (upstream ``pkg/webhook/cm``): ``/validate-configmap``."""
