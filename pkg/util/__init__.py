"""Small helpers shared by every component (upstream `pkg/util`)."""
