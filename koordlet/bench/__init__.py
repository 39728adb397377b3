"""koordlet benchmarks (no upstream counterpart): ``python -m koordlet.bench``."""
