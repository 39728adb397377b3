"""End-to-end suites: components as real processes against the embedded API server."""
