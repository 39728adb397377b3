"""Runtime hook protocol (upstream `apis/runtime`)."""
