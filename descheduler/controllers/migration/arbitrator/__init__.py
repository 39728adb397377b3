"""The MigrationController's admission: which pods may migrate, and the arbitration of waiting
PodMigrationJobs (upstream ``pkg/descheduler/controllers/migration/arbitrator``)."""
