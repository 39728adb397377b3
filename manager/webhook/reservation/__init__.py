"""Reservation webhooks: ``/mutate-reservation`` (upstream ``pkg/webhook/reservation``)."""
