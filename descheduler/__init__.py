"""koord-descheduler: the Python counterpart of upstream `cmd/koord-descheduler`
and `pkg/descheduler`.

The descheduling framework, LowNodeLoad and the MigrationController.
Not implemented yet: `main.py` only parses `--help`.
"""
