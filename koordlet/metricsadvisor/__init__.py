"""koordlet metrics advisor (upstream ``pkg/koordlet/metricsadvisor``): collectors, their loop."""
