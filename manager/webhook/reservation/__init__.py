"""Reservation webhooks: ``/mutate-reservation`` (upstream ``pkg/webhook/reservation``) and
``/validate-scheduling-koordinator-sh-v1alpha1-reservation`` (beyond upstream)."""
