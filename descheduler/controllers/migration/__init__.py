"""The MigrationController and PodMigrationJobs (upstream ``pkg/descheduler/controllers/migration``)."""
