"""The ``topology.node.k8s.io`` group: NodeResourceTopology (k8stopologyawareschedwg
noderesourcetopology-api `pkg/apis/topology`)."""
