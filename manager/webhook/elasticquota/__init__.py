"""ElasticQuota admission (upstream ``pkg/webhook/elasticquota``): the in-memory quota tree,
``/mutate-scheduling-sigs-k8s-io-v1alpha1-elasticquota`` and
``/validate-scheduling-sigs-k8s-io-v1alpha1-elasticquota``."""
