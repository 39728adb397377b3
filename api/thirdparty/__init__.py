"""Third-party API groups Koordinator uses (upstream `apis/thirdparty`)."""
