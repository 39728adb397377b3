"""koord-manager: the Python counterpart of upstream `cmd/koord-manager`, with
`pkg/slo-controller`, `pkg/webhook` and `pkg/quota-controller`.

The slo-controller (NodeMetric, NodeSLO, batch/mid resources), admission webhooks and the
quota controller. Not implemented yet: `main.py` only parses `--help`.
"""
