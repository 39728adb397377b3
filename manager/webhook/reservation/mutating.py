"""``/mutate-reservation``: ClusterColocationProfiles applied to new Reservations.

Corresponds to upstream ``pkg/webhook/reservation/mutating``:
the profile logic of the pod webhook on Reservation CREATE, matched by the Reservation's
labels only (a Reservation is cluster-scoped, so ``namespaceSelector`` is ignored). Labels,
annotations, QoS and koordinator priority go to the Reservation's metadata; scheduler name and
priority class to ``spec.template.spec``; the patch to the Reservation. Upstream does not
rename cpu/memory to batch resources in the template, and neither does this.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field

from pkg.features.features import RESERVATION_MUTATING_WEBHOOK

from ..admission import AdmissionRequest, AdmissionResponse, allowed, errored, patch_response
from ..cached_reader import Reader
from ..configuration import MUTATE_RESERVATION
from ..framework import HandlerBuilder
from ..pod.colocation_profile import MutationError, ProfileMatcher, mutate_by_profiles

log = logging.getLogger(__name__)
TEMPLATE_SPEC = ("spec", "template", "spec")


@dataclass(slots=True)
class ReservationMutatingHandler:
    client: Reader  # the API client or the server's informer cache
    matcher: ProfileMatcher | None = field(default=None)

    def __post_init__(self) -> None:
        if self.matcher is None:
            self.matcher = ProfileMatcher(self.client)

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "reservations" or req.sub_resource:
            return allowed()
        if req.object is None:
            return errored(400, "reservation mutating webhook: request has no object")
        if req.operation != "CREATE":
            return allowed()
        assert self.matcher is not None
        try:
            mutated = mutate_by_profiles(self.client, self.matcher, copy.deepcopy(req.object),
                                         req.namespace, TEMPLATE_SPEC,
                                         object_selector_only=True, skip_resources=True)
        except MutationError as e:
            name = (req.object.get("metadata") or {}).get("name", req.name)
            log.error("failed to mutate Reservation %s by ClusterColocationProfile: %s",
                      name, e)
            return errored(500, str(e))
        return patch_response(req.object, mutated)


HANDLER_BUILDERS = (
    HandlerBuilder(MUTATE_RESERVATION, RESERVATION_MUTATING_WEBHOOK,
                   lambda ctx: ReservationMutatingHandler(
                       ctx.reader, ProfileMatcher(ctx.reader, recorder=ctx.recorder))),
)


__all__ = ["HANDLER_BUILDERS", "ReservationMutatingHandler"]
