"""Host system access for koordlet: upstream `pkg/koordlet/util/system`.

Owns the cgroup side of the node: the configured roots (`config`), cgroup v1/v2 and driver
detection with the directory layout of kube-QoS, pod and container cgroups (`cgroup_driver`),
the registry of cgroup files koordlet reads and writes with their validators (`cgroup_resource`),
the v1→v2 value translations (`cgroup2`), CPU-list sets (`cpuset`) and raw file access with
errors that name the file and value (`cgroup`). `CgroupEnv` ties one root, version and driver
together; every other module receives it explicitly instead of reading global state.
"""
