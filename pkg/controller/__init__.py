"""Controller runner shared by koord-manager, koord-scheduler and koord-descheduler
controllers (controller-runtime's controller and reconcile packages)."""

from pkg.controller.controller import (
    Controller,
    ControllerMetrics,
    EnqueueHandler,
    Reconciler,
    Result,
)

__all__ = ["Controller", "ControllerMetrics", "EnqueueHandler", "Reconciler", "Result"]
