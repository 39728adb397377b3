"""``/validate-config-koordinator-sh-v1alpha1-clustercolocationprofile``: ClusterColocationProfile
validation on CREATE and UPDATE.

Upstream has no such webhook (``apis/config/v1alpha1/cluster_colocation_profile_types.go`` and
its CRD constrain only ``qosClass``), so a profile whose selector cannot be parsed matches every
pod there. Here a profile is refused unless the pod mutating webhook
(``manager/webhook/pod/colocation_profile.py``) can apply it as written: selectors that parse
(``metav1validation.ValidateLabelSelector``), ``probability`` an integer or percentage in
0..100, a known ``qosClass``, an existing ``priorityClassName``, labels, annotations, key
mappings and the scheduler name a pod could carry, and a ``patch`` that strategic-merges onto a
pod (an object of ``metadata`` and ``spec`` whose fields a pod has, containers keyed by name).
Refusals are 422 ``Invalid`` with ``ClusterColocationProfile "<name>" is invalid: <field
errors>``, as the API server words its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from pydantic import ValidationError

from api.config.v1alpha1 import ClusterColocationProfile
from api.config.v1alpha1.cluster_colocation_profile import QOS_CLASSES
from api.loader import field_path
from pkg.client import ApiError
from pkg.client.resources import PRIORITY_CLASSES
from pkg.features.features import POD_MUTATING_WEBHOOK
from pkg.util.validation import (
    TOTAL_ANNOTATION_SIZE_LIMIT,
    FieldError,
    JSONValue,
    go_len,
    go_value,
    invalid,
    invalid_message,
    is_dns1123_subdomain,
    is_qualified_name,
    not_found,
    not_supported,
    required,
    validate_label_name,
    validate_label_selector,
    validate_labels,
)

from ..admission import AdmissionRequest, AdmissionResponse, allowed
from ..cached_reader import Reader
from ..configuration import VALIDATE_CLUSTER_COLOCATION_PROFILE
from ..framework import HandlerBuilder

KIND = "ClusterColocationProfile"
_INT32 = (-(2**31), 2**31 - 1)
# Used with fullmatch: Python's '$' would let a final newline through, and '\d' any digit
# that Go's strconv.Atoi refuses.
_PERCENT = re.compile(r"([0-9]+)%")
_LABEL_SUFFIX = re.compile(r"[-A-Za-z0-9_.]*")

# What a patch may set: the parts of a pod its creator writes.
_PATCH_FIELDS = ("metadata", "spec")
_PATCH_METADATA_FIELDS = ("labels", "annotations", "finalizers", "ownerReferences")
# core/v1 PodSpec's fields and their JSON types.
_POD_SPEC_FIELDS: Mapping[str, type] = {
    "activeDeadlineSeconds": int, "affinity": dict, "automountServiceAccountToken": bool,
    "containers": list, "dnsConfig": dict, "dnsPolicy": str, "enableServiceLinks": bool,
    "ephemeralContainers": list, "hostAliases": list, "hostIPC": bool, "hostNetwork": bool,
    "hostPID": bool, "hostUsers": bool, "hostname": str, "imagePullSecrets": list,
    "initContainers": list, "nodeName": str, "nodeSelector": dict, "os": dict,
    "overhead": dict, "preemptionPolicy": str, "priority": int, "priorityClassName": str,
    "readinessGates": list, "resourceClaims": list, "restartPolicy": str,
    "runtimeClassName": str, "schedulerName": str, "schedulingGates": list,
    "securityContext": dict, "serviceAccount": str, "serviceAccountName": str,
    "setHostnameAsFQDN": bool, "shareProcessNamespace": bool, "subdomain": str,
    "terminationGracePeriodSeconds": int, "tolerations": list,
    "topologySpreadConstraints": list, "volumes": list,
}
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_JSON_TYPE = {bool: "a boolean", int: "an integer", str: "a string", dict: "an object",
              list: "a list"}


def _is_int(value: JSONValue) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _probability_errors(value: JSONValue) -> list[FieldError]:
    path = "spec.probability"
    if value is None:
        return []
    if _is_int(value):
        return [] if 0 <= value <= 100 else [invalid(path, value, "must be between 0 and 100")]
    match = _PERCENT.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return [invalid(path, value, 'must be an integer or a percentage (e.g. "50%")')]
    if int(match.group(1)) > 100:
        return [invalid(path, value, "must be between 0% and 100%")]
    return []


def _annotation_errors(path: str, annotations: JSONValue) -> list[FieldError]:
    """``ValidateAnnotations``; ``None`` values (a patch deleting a key) are allowed."""
    if annotations is None:
        return []
    if not isinstance(annotations, Mapping):
        return [invalid(path, annotations, "must be an object of annotation keys to values")]
    errs: list[FieldError] = []
    size = 0
    for key, value in annotations.items():
        errs.extend(invalid(path, key, p) for p in is_qualified_name(key.lower()))
        if isinstance(value, str):
            size += go_len(key) + go_len(value)
        elif value is not None:
            errs.append(invalid(f"{path}[{key}]", value, "must be a string"))
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(FieldError(path, f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} "
                                     "bytes"))
    return errs


def _key_mapping_errors(path: str, mapping: JSONValue) -> list[FieldError]:
    """Old key → new key: both must be label/annotation keys."""
    if mapping is None:
        return []
    if not isinstance(mapping, Mapping):
        return [invalid(path, mapping, "must be an object of old keys to new keys")]
    errs: list[FieldError] = []
    for old, new in mapping.items():
        errs.extend(validate_label_name(path, old))
        errs.extend(validate_label_name(f"{path}[{old}]", new))
    return errs


def _suffix_errors(suffixes: JSONValue) -> list[FieldError]:
    path = "spec.labelSuffixes"
    if suffixes is None:
        return []
    if not isinstance(suffixes, Mapping):
        return [invalid(path, suffixes, "must be an object of label keys to suffixes")]
    errs: list[FieldError] = []
    for key, suffix in suffixes.items():
        errs.extend(validate_label_name(path, key))
        if not isinstance(suffix, str) or not _LABEL_SUFFIX.fullmatch(suffix) or len(suffix) > 63:
            errs.append(invalid(f"{path}[{key}]", suffix, "a suffix must be at most 63 "
                                "alphanumeric characters, '-', '_' or '.'"))
    return errs


def _patch_metadata_errors(path: str, metadata: JSONValue) -> list[FieldError]:
    if not isinstance(metadata, Mapping):
        return [invalid(path, metadata, "must be an object")]
    errs: list[FieldError] = []
    for key, value in metadata.items():
        if key not in _PATCH_METADATA_FIELDS:
            errs.append(not_supported(path, key, _PATCH_METADATA_FIELDS))
        elif key == "labels":
            kept = {k: v for k, v in value.items() if v is not None} \
                if isinstance(value, Mapping) else value
            errs.extend(validate_labels(f"{path}.labels", kept))
        elif key == "annotations":
            errs.extend(_annotation_errors(f"{path}.annotations", value))
        elif value is not None and not isinstance(value, list):
            errs.append(invalid(f"{path}.{key}", value, "must be a list"))
    return errs


def _patch_spec_errors(path: str, spec: JSONValue) -> list[FieldError]:
    if not isinstance(spec, Mapping):
        return [invalid(path, spec, "must be an object")]
    errs: list[FieldError] = []
    for key, value in spec.items():
        want = _POD_SPEC_FIELDS.get(key)
        if want is None:
            errs.append(invalid(path, key, "not a field of a pod's spec"))
        elif value is None:
            continue  # deletes the field
        elif not isinstance(value, want) or (want is int and isinstance(value, bool)):
            errs.append(invalid(f"{path}.{key}", value, f"must be {_JSON_TYPE[want]}"))
        elif key in _CONTAINER_LISTS:
            assert isinstance(value, list)
            for i, container in enumerate(value):
                name = container.get("name") if isinstance(container, Mapping) else None
                if not isinstance(name, str) or not name:
                    errs.append(required(f"{path}.{key}[{i}].name", "containers are merged "
                                         "into the pod's by name"))
    if isinstance(spec.get("schedulerName"), str):
        errs.extend(_scheduler_name_errors(f"{path}.schedulerName", spec["schedulerName"]))
    return errs


def _patch_errors(patch: JSONValue) -> list[FieldError]:
    """A strategic merge patch of the pod: ``metadata`` and ``spec`` with a pod's fields."""
    path = "spec.patch"
    if patch is None:
        return []
    if not isinstance(patch, Mapping):
        return [invalid(path, patch, "must be an object patching the pod")]
    errs: list[FieldError] = []
    for key, value in patch.items():
        if key not in _PATCH_FIELDS:
            errs.append(not_supported(path, key, _PATCH_FIELDS))
        elif key == "metadata":
            errs.extend(_patch_metadata_errors(f"{path}.metadata", value))
        else:
            errs.extend(_patch_spec_errors(f"{path}.spec", value))
    return errs


def _scheduler_name_errors(path: str, name: JSONValue) -> list[FieldError]:
    if name is None or name == "":
        return []
    if not isinstance(name, str):
        return [invalid(path, name, "must be a string")]
    return [invalid(path, name, p) for p in is_dns1123_subdomain(name)]


def _field_of(path: str) -> str:
    """``spec.labels`` of ``spec.labels[a]`` or ``spec.labels.a``: errors of one field are
    reported once."""
    return ".".join(re.split(r"[.\[]", path)[:2])


def _model_errors(obj: Mapping[str, JSONValue], reported: Sequence[FieldError]
                  ) -> list[FieldError]:
    """What the API model refuses beyond the checks above (types of the other fields)."""
    try:
        ClusterColocationProfile.model_validate(obj)
    except ValidationError as e:
        seen = {_field_of(err.path) for err in reported}
        out = []
        for err in e.errors():
            path = field_path(tuple(err["loc"]))
            if _field_of(path) in seen:
                continue
            out.append(invalid(path, err.get("input"), err["msg"].removeprefix(
                "Value error, ")))
        return out
    return []


@dataclass(slots=True)
class ProfileValidator:
    """Field errors of one ClusterColocationProfile (parsed JSON), for the webhook and for
    a profile already stored (``spec_selector_errors``)."""

    reader: Reader  # PriorityClasses are read through it

    def errors(self, obj: Mapping[str, JSONValue]) -> list[FieldError]:
        """Raises ApiError when a PriorityClass cannot be read (other than not found)."""
        spec = obj.get("spec")
        if spec is None:
            spec = {}
        if not isinstance(spec, Mapping):
            return [invalid("spec", spec, "must be an object")]
        errs = spec_selector_errors(spec)
        errs.extend(_probability_errors(spec.get("probability")))
        qos = spec.get("qosClass")
        if qos not in (None, "", *QOS_CLASSES):
            errs.append(not_supported("spec.qosClass", qos, QOS_CLASSES))
        errs.extend(self._priority_class_errors(spec.get("priorityClassName")))
        priority = spec.get("koordinatorPriority")
        if priority is not None and not (_is_int(priority) and
                                         _INT32[0] <= priority <= _INT32[1]):
            errs.append(invalid("spec.koordinatorPriority", priority,
                                "must be a 32-bit integer"))
        errs.extend(validate_labels("spec.labels", spec.get("labels")))
        errs.extend(_annotation_errors("spec.annotations", spec.get("annotations")))
        errs.extend(_key_mapping_errors("spec.labelKeysMapping", spec.get("labelKeysMapping")))
        errs.extend(_key_mapping_errors("spec.annotationKeysMapping",
                                        spec.get("annotationKeysMapping")))
        errs.extend(_suffix_errors(spec.get("labelSuffixes")))
        errs.extend(_scheduler_name_errors("spec.schedulerName", spec.get("schedulerName")))
        errs.extend(_patch_errors(spec.get("patch")))
        return errs + _model_errors(obj, errs)

    def _priority_class_errors(self, name: JSONValue) -> list[FieldError]:
        path = "spec.priorityClassName"
        if name is None or name == "":
            return []
        if not isinstance(name, str):
            return [invalid(path, name, "must be a string")]
        try:
            self.reader.get(PRIORITY_CLASSES, name)
        except ApiError as e:
            if e.status != 404:
                raise
            return [not_found(path, name)]
        return []


def spec_selector_errors(spec: Mapping[str, JSONValue]) -> list[FieldError]:
    """The errors of ``spec.namespaceSelector`` and ``spec.selector``."""
    return [*validate_label_selector("spec.namespaceSelector", spec.get("namespaceSelector")),
            *validate_label_selector("spec.selector", spec.get("selector"))]


@dataclass(slots=True)
class ProfileValidatingHandler:
    reader: Reader

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.operation not in ("CREATE", "UPDATE") or req.object is None:
            return allowed()
        obj = req.object
        name = str((obj.get("metadata") or {}).get("name") or req.name)
        try:
            errs = ProfileValidator(self.reader).errors(obj)
        except ApiError as e:
            return AdmissionResponse(False, 500, f"{KIND} {go_value(name)}: spec."
                                                 f"priorityClassName: cannot read "
                                                 f"PriorityClass: {e}")
        if errs:
            return AdmissionResponse(False, 422,
                                     invalid_message(KIND, name, errs), "Invalid")
        return allowed()


HANDLER_BUILDERS = (
    # Profiles matter to the pod mutating webhook only: validated while it is on.
    HandlerBuilder(VALIDATE_CLUSTER_COLOCATION_PROFILE, POD_MUTATING_WEBHOOK,
                   lambda ctx: ProfileValidatingHandler(ctx.reader)),
)


__all__ = ["HANDLER_BUILDERS", "KIND", "ProfileValidatingHandler", "ProfileValidator",
           "spec_selector_errors"]
