"""Benchmarks of the embedded API server (``python -m test.apiserver.bench``)."""
