"""What Koordinator adds around the scheduling framework (koordinator
``pkg/scheduler/frameworkext``): the extended handle every plugin is built with, forget-pod
handlers, the transformers that may change a pod or node before an extension point runs, and
out-of-tree plugin modules."""
