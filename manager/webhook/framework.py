"""How a handler module declares its admission paths (upstream `pkg/webhook/util/framework`:
``HandlerBuilder``, and the per-package ``HandlerBuilderMap`` with the gate the package's
``pkg/webhook/add_*.go`` registers it under).

Each handler module lists a :class:`HandlerBuilder` per path it serves;
``manager.webhook.registry`` collects them, and the server builds the handlers whose gate is on
from one :class:`HandlerContext`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pkg.events import EventRecorder
from pkg.features import FeatureGate

from .admission import Handler
from .cached_reader import Reader
from .elasticquota.topology import QuotaTopology
from .options import WebhookOptions


@dataclass(slots=True, frozen=True)
class HandlerContext:
    """What the handlers are built from (upstream: the manager each builder is given)."""

    client: Reader  # the API client (the handlers only read)
    options: WebhookOptions
    gate: FeatureGate
    topology: QuotaTopology  # the quota tree the ElasticQuota and pod webhooks share
    reader: Reader  # what the profile webhooks read through: the client or its informer cache
    recorder: EventRecorder | None = None  # events about the objects the webhooks read


@dataclass(slots=True, frozen=True)
class HandlerBuilder:
    """One admission path: served by ``build(ctx)`` while feature gate ``gate`` is on."""

    path: str
    gate: str
    build: Callable[[HandlerContext], Handler]
