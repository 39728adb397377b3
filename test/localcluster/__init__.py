"""The local cluster of ``hack/local-up``: the embedded API server, simulated nodes with a
koordlet each, koord-manager and koord-scheduler as processes, and a co-location scenario."""
