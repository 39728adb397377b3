"""``/validate-scheduling-koordinator-sh-v1alpha1-reservation``: Reservation validation on CREATE
and on UPDATE of the spec.

Goes beyond upstream: upstream has no validating webhook for Reservations (only
``/mutate-reservation``); the scheduler's ``ValidateReservation`` (template, at least one owner,
``ttl`` or ``expires``) fails a bad Reservation at PreFilter, over and over, and the CRD keeps
``spec.template`` schemaless. Here a Reservation is refused at admission when the scheduler
could not place or match it as written:

* ``spec.template`` missing, ``spec.owners`` empty, neither ``spec.ttl`` nor ``spec.expires``
  (``ValidateReservation``'s three rules);
* an owner with no part set, or a part with nothing in it (an empty ``object``,
  ``controller`` or ``labelSelector`` matches every pod), or a label selector that does not
  parse;
* a request, limit or overhead of the template that is not a quantity or is negative;
* a template node affinity or a ``scheduling.koordinator.sh/reservation-affinity`` annotation
  (on the Reservation or its template: the reserve pod carries both) whose selector terms do
  not parse, or an annotation that is not valid JSON.

Refusals are 422 ``Invalid`` with ``Reservation "<name>" is invalid: <field errors>``, as the
API server words its own. Status writes (the scheduler's Bind, the Reservation controller) and
updates that leave the spec alone are not checked, so a Reservation stored before the webhook
ran can still be finished and collected. Served while ``ReservationMutatingWebhook`` is on,
with the mutating Reservation webhook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.reservation import ANNOTATION_RESERVATION_AFFINITY, parse_reservation_affinity
from pkg.features.features import RESERVATION_MUTATING_WEBHOOK
from pkg.util.nodeaffinity import parse_term
from pkg.util.validation import (
    FieldError,
    JSONValue,
    invalid,
    invalid_message,
    required,
    validate_label_selector,
)

from ..admission import AdmissionRequest, AdmissionResponse, allowed
from ..configuration import VALIDATE_RESERVATION
from ..framework import HandlerBuilder

KIND = "Reservation"
_RESOURCE_FIELDS = ("requests", "limits")
_CONTAINER_LISTS = ("initContainers", "containers")


def _object(value: JSONValue) -> Mapping[str, JSONValue]:
    return value if isinstance(value, Mapping) else {}


def _term_errors(path: str, terms: JSONValue) -> list[FieldError]:
    """Node selector terms as ``nodeaffinity.NewNodeSelector`` parses them (strictly)."""
    if terms is None:
        return []
    if not isinstance(terms, Sequence) or isinstance(terms, str):
        return [invalid(path, terms, "must be a list of node selector terms")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        if not isinstance(term, Mapping):
            errs.append(invalid(f"{path}[{i}]", term, "must be an object"))
            continue
        for message in parse_term(term, f"{path}[{i}]").errors:
            where, _, detail = message.partition(": ")
            errs.append(FieldError(where, detail))
    return errs


def _owner_errors(owners: JSONValue) -> list[FieldError]:
    if not isinstance(owners, Sequence) or isinstance(owners, str) or not owners:
        return [required("spec.owners", "at least one owner: the pods that may use the "
                                        "reservation")]
    errs: list[FieldError] = []
    for i, owner in enumerate(owners):
        path = f"spec.owners[{i}]"
        owner = _object(owner)
        parts = {k: owner.get(k) for k in ("object", "controller", "labelSelector")
                 if owner.get(k) is not None}
        if not parts:
            errs.append(required(path, "one of object, controller or labelSelector"))
            continue
        for part, value in parts.items():
            if isinstance(value, Mapping) and not value:
                errs.append(required(f"{path}.{part}", "must not be empty: it would match "
                                                       "every pod"))
        errs.extend(validate_label_selector(f"{path}.labelSelector", parts.get("labelSelector")))
    return errs


def _quantity_errors(path: str, resources: JSONValue) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, quantity in _object(resources).items():
        where = f"{path}[{name}]"
        try:
            if not isinstance(quantity, str | int | float) or isinstance(quantity, bool):
                raise ValueError(quantity)
            value = quantity_value(quantity)
        except (ValueError, ArithmeticError):
            errs.append(invalid(where, quantity, "must be a quantity (like '500m', '2', "
                                                 "'16Gi')"))
            continue
        if value < 0:
            errs.append(invalid(where, quantity, "must be greater than or equal to 0"))
    return errs


def _resource_errors(spec: Mapping[str, JSONValue]) -> list[FieldError]:
    base = "spec.template.spec"
    errs: list[FieldError] = []
    for containers in _CONTAINER_LISTS:
        listed = spec.get(containers)
        if not isinstance(listed, Sequence) or isinstance(listed, str):
            continue
        for i, container in enumerate(listed):
            resources = _object(_object(container).get("resources"))
            for field in _RESOURCE_FIELDS:
                errs.extend(_quantity_errors(f"{base}.{containers}[{i}].resources.{field}",
                                             resources.get(field)))
    errs.extend(_quantity_errors(f"{base}.overhead", spec.get("overhead")))
    return errs


def _affinity_annotation_errors(path: str, annotations: JSONValue) -> list[FieldError]:
    raw = _object(annotations).get(ANNOTATION_RESERVATION_AFFINITY)
    if not isinstance(raw, str):
        return []
    where = f"{path}[{ANNOTATION_RESERVATION_AFFINITY}]"
    try:
        affinity = parse_reservation_affinity({ANNOTATION_RESERVATION_AFFINITY: raw})
    except MalformedValueError as err:
        return [invalid(where, raw, str(err))]
    required_terms = affinity.required_during_scheduling_ignored_during_execution \
        if affinity is not None else None
    if required_terms is None or not required_terms.reservation_selector_terms:
        return []
    terms = [t.to_dict() for t in required_terms.reservation_selector_terms]
    return _term_errors(f"{where}.requiredDuringSchedulingIgnoredDuringExecution."
                        "reservationSelectorTerms", terms)


def reservation_errors(obj: Mapping[str, JSONValue]) -> list[FieldError]:
    """The field errors of a Reservation (parsed JSON)."""
    spec = _object(obj.get("spec"))
    errs: list[FieldError] = []
    template = spec.get("template")
    if not isinstance(template, Mapping):
        errs.append(required("spec.template", "the pod the reservation holds resources for"))
        template = {}
    errs.extend(_owner_errors(spec.get("owners")))
    if spec.get("ttl") is None and spec.get("expires") is None:
        errs.append(required("spec.ttl", "ttl or expires"))
    pod_spec = _object(template.get("spec"))
    errs.extend(_resource_errors(pod_spec))
    node_affinity = _object(_object(pod_spec.get("affinity")).get("nodeAffinity"))
    required_affinity = _object(node_affinity.get(
        "requiredDuringSchedulingIgnoredDuringExecution"))
    errs.extend(_term_errors(
        "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms", required_affinity.get("nodeSelectorTerms")))
    errs.extend(_affinity_annotation_errors("metadata.annotations",
                                            _object(obj.get("metadata")).get("annotations")))
    errs.extend(_affinity_annotation_errors("spec.template.metadata.annotations",
                                            _object(template.get("metadata")).get("annotations")))
    return errs


@dataclass(slots=True)
class ReservationValidatingHandler:
    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if (req.resource != "reservations" or req.sub_resource
                or req.operation not in ("CREATE", "UPDATE") or req.object is None):
            return allowed()
        obj = req.object
        if req.operation == "UPDATE" and req.old_object is not None and \
                req.old_object.get("spec") == obj.get("spec"):
            return allowed()
        errs = reservation_errors(obj)
        if errs:
            name = str(_object(obj.get("metadata")).get("name") or req.name)
            return AdmissionResponse(False, 422, invalid_message(KIND, name, errs), "Invalid")
        return allowed()


HANDLER_BUILDERS = (
    HandlerBuilder(VALIDATE_RESERVATION, RESERVATION_MUTATING_WEBHOOK,
                   lambda ctx: ReservationValidatingHandler()),
)


__all__ = ["HANDLER_BUILDERS", "KIND", "ReservationValidatingHandler", "reservation_errors"]
