"""What Koordinator adds around the scheduling framework (koordinator
``pkg/scheduler/frameworkext``): the extended handle every plugin is built with and
forget-pod handlers."""
