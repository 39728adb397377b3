"""The sigs.k8s.io/descheduler plugins Koordinator wraps (``pkg/descheduler/framework/plugins/
kubernetes``): they evict through the Koordinator evictor like the in-tree plugins."""
