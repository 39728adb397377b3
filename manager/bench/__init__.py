"""koord-manager benchmarks (``python -m manager.bench``); see ``noderesource``."""
