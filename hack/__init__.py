"""Developer tooling: setup, BUILD generation, lint and local-up (upstream `hack/`)."""
