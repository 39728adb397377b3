"""The MigrationController and PodMigrationJobs.

Upstream ``pkg/descheduler/controllers/migration``.
"""
