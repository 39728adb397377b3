"""``/validate-pod`` and ``/validate-pod-binding``.

Corresponds to upstream ``pkg/webhook/pod/validating`` (and ``binding_admission.go``):
the reserve-pod annotation, ClusterColocationProfile rules (QoS/priority immutability and
combinations, batch resources need BE, LSR/LSE integer CPUs), the ElasticQuota pod checks,
and binding admission. Violations answer 400 with the aggregated field errors. Where upstream
silently ignores a label value it cannot use (a ``koordinator.sh/qosClass`` that is no QoS
class counts as none, a non-integer ``koordinator.sh/priority`` as 0, an unknown
``koordinator.sh/priority-class`` as none), the pod is admitted as upstream does, with an
admission warning naming the label and the value. Quota admission, device resource checks and
the enhanced validator (alpha gates, off by default) are not implemented.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from api.config.v1alpha1.cluster_colocation_profile import QOS_CLASSES
from api.core import quantity_value
from api.errors import MalformedValueError
from api.extension.elastic_quota import (
    DEFAULT_QUOTA_NAME,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_NAME,
)
from api.extension.priority import (
    LABEL_POD_PRIORITY,
    LABEL_POD_PRIORITY_CLASS,
    PriorityClass,
    get_pod_priority_class_raw,
    parse_sub_priority,
    priority_class_by_name,
)
from api.extension.qos import LABEL_POD_QOS, QoSClass, get_pod_qos_class_raw, qos_class_by_name
from api.extension.resource import BATCH_CPU, BATCH_MEMORY
from pkg.client import ApiError
from pkg.client.resources import PODS
from pkg.features import FeatureGate, default_feature_gate
from pkg.features.features import (
    BINDING_ADMISSION_WEBHOOK,
    COLOCATION_PROFILE_SKIP_VALIDATING_PRIORITY,
    POD_VALIDATING_WEBHOOK,
    SUPPORT_PARENT_QUOTA_SUBMIT_POD,
)
from pkg.util.podresources import pod_requests
from pkg.util.validation import go_value

from ..admission import AdmissionRequest, AdmissionResponse, allowed, denied, errored
from ..cached_reader import Reader
from ..configuration import VALIDATE_POD, VALIDATE_POD_BINDING
from ..elasticquota.topology import QuotaTopology
from ..framework import HandlerBuilder
from ..options import WebhookOptions

Obj = dict
ANNOTATION_RESERVE_POD = "scheduling.koordinator.sh/reserve-pod"
_FORBIDDEN = {QoSClass.BE: (PriorityClass.NONE, PriorityClass.PROD),
              QoSClass.LSR: (PriorityClass.NONE, PriorityClass.MID, PriorityClass.BATCH,
                             PriorityClass.FREE)}


def _labels(pod: Obj | None) -> dict[str, str]:
    return dict(((pod or {}).get("metadata") or {}).get("labels") or {})


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(go_value(v) for v in values)


_PRIORITY_CLASS_NAMES = tuple(p.value for p in PriorityClass if p is not PriorityClass.NONE)


def ignored_label_warnings(pod: Obj) -> list[str]:
    """Warnings for the Koordinator labels whose value upstream ignores."""
    labels = _labels(pod)
    out = []
    qos = labels.get(LABEL_POD_QOS)
    if qos and qos_class_by_name(qos) is QoSClass.NONE:
        out.append(f"metadata.labels[{LABEL_POD_QOS}]: {go_value(qos)} is not a Koordinator "
                   f"QoS class (supported values: {_listed(QOS_CLASSES)}); the pod is treated "
                   f"as having none")
    priority_class = labels.get(LABEL_POD_PRIORITY_CLASS)
    if priority_class is not None and \
            priority_class_by_name(priority_class) is PriorityClass.NONE:
        out.append(f"metadata.labels[{LABEL_POD_PRIORITY_CLASS}]: {go_value(priority_class)} "
                   f"is not a Koordinator priority class (supported values: "
                   f"{_listed(_PRIORITY_CLASS_NAMES)}); the pod is treated as having none")
    priority = labels.get(LABEL_POD_PRIORITY)
    try:
        parse_sub_priority(priority)
    except MalformedValueError:
        out.append(f"metadata.labels[{LABEL_POD_PRIORITY}]: {go_value(priority)} is not a "
                   f"32-bit integer; the label is ignored")
    return out


def colocation_errors(pod: Obj, old: Obj | None, gate: FeatureGate) -> list[str]:
    """The ClusterColocationProfile rules, as field errors."""
    errs: list[str] = []
    labels = _labels(pod)
    if old is not None:
        old_labels = _labels(old)
        if labels.get(LABEL_POD_QOS) != old_labels.get(LABEL_POD_QOS):
            errs.append(f"labels.{LABEL_POD_QOS}: Invalid value: "
                        f"\"{labels.get(LABEL_POD_QOS, '')}\": field is immutable")
        if get_pod_priority_class_raw(pod) != get_pod_priority_class_raw(old):
            errs.append(f"spec.priority: Invalid value: \"{get_pod_priority_class_raw(pod)}\": "
                        f"field is immutable")
        if not gate.enabled(COLOCATION_PROFILE_SKIP_VALIDATING_PRIORITY) and \
                labels.get(LABEL_POD_PRIORITY) != old_labels.get(LABEL_POD_PRIORITY):
            errs.append(f"labels.{LABEL_POD_PRIORITY}: Invalid value: "
                        f"\"{labels.get(LABEL_POD_PRIORITY, '')}\": field is immutable")
    try:
        requests = pod_requests(pod)
    except (ValueError, ArithmeticError) as e:
        return [*errs, f"pod.spec.containers[*].resources.requests: Invalid value: {e}"]
    qos = get_pod_qos_class_raw(pod)
    if (requests.get(BATCH_CPU) or requests.get(BATCH_MEMORY)) and qos != QoSClass.BE:
        errs.append(f"labels.{LABEL_POD_QOS}: Required value: must specify koordinator QoS BE "
                    f"with koordinator colocation resources")
    priority = get_pod_priority_class_raw(pod)
    if priority in _FORBIDDEN.get(qos, ()):
        errs.append(f"Pod: Forbidden: {LABEL_POD_QOS}={qos} and priorityClass="
                    f"{priority.value or 'none'} cannot be used in combination")
    if qos in (QoSClass.LSR, QoSClass.LSE):
        cpu = _cpu_request(pod)
        if cpu == 0:
            errs.append(f"pod.spec.containers[*].resources.requests: Required value: {qos} Pod "
                        f"must declare the requested CPUs")
        elif cpu % 1000:
            errs.append(f"pod.spec.containers[*].resources.requests: Invalid value: "
                        f"\"{_milli_text(cpu)}\": the requested CPUs of {qos} Pod must be "
                        f"integer")
    return errs


def _cpu_request(pod: Obj) -> int:
    """Total cpu request in milli-cores (containers only, as upstream sums them)."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        cpu = ((c.get("resources") or {}).get("requests") or {}).get("cpu")
        if cpu is not None:
            total += int(quantity_value(cpu) * 1000)
    return total


def _milli_text(milli: int) -> str:
    return f"{milli}m"


@dataclass(slots=True)
class PodValidatingHandler:
    client: Reader  # the API client
    topology: QuotaTopology | None = None
    gate: FeatureGate = default_feature_gate

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        if req.resource != "pods" or req.sub_resource:
            return allowed()
        if req.operation == "DELETE" or req.object is None:
            return allowed()
        resp = self._validate(req.object, req)
        resp.warnings = ignored_label_warnings(req.object)
        return resp

    def _validate(self, pod: Obj, req: AdmissionRequest) -> AdmissionResponse:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if ANNOTATION_RESERVE_POD in annotations:
            return errored(400, f"annotations.{ANNOTATION_RESERVE_POD}: Forbidden: cannot set "
                                f"in annotations")
        old = req.old_object if req.operation == "UPDATE" else None
        errs = colocation_errors(pod, old, self.gate)
        if errs:
            return errored(400, "; ".join(errs) if len(errs) > 1 else errs[0])
        msg = self._quota_error(pod, old, req.namespace)
        if msg:
            return errored(400, msg)
        return allowed()

    def _quota_error(self, pod: Obj, old: Obj | None, namespace: str) -> str:
        if old is not None and _labels(pod).get(LABEL_PREEMPTIBLE) != \
                _labels(old).get(LABEL_PREEMPTIBLE):
            return f"labels.{LABEL_PREEMPTIBLE}: Forbidden: the pod's preemptible label can " \
                   f"not be changed"
        if self.topology is None or self.gate.enabled(SUPPORT_PARENT_QUOTA_SUBMIT_POD):
            return ""
        ns = (pod.get("metadata") or {}).get("namespace") or namespace
        name = _labels(pod).get(LABEL_QUOTA_NAME) or ""
        if not name:
            if self.topology.get(ns) is not None:
                name = ns
            else:
                name = self.topology.quota_for_namespace(ns) or DEFAULT_QUOTA_NAME
        info = self.topology.get(name)
        if info is not None and info.is_parent:
            pod_name = (pod.get("metadata") or {}).get("name", "")
            return f"pod can not be linked to a parentQuotaGroup,quota:{name}, pod:{pod_name}"
        return ""


@dataclass(slots=True)
class BindingAdmissionHandler:
    """``/validate-pod-binding``: only listed users may bind pods in enforced namespaces."""

    client: Reader  # the API client
    options: WebhookOptions = field(default_factory=WebhookOptions)
    gate: FeatureGate = default_feature_gate

    def __call__(self, req: AdmissionRequest) -> AdmissionResponse:
        o = self.options
        if not self.gate.enabled(BINDING_ADMISSION_WEBHOOK) or not o.binding_user_names:
            return allowed()
        if req.resource != "pods" or req.sub_resource != "binding" or \
                req.operation != "CREATE":
            return allowed()
        user = str(req.user_info.get("username") or "")
        if any(u in user for u in o.binding_user_names):
            return allowed()
        ns = req.namespace
        if ns in o.binding_exclude_namespaces or not (
                "*" in o.binding_namespaces or ns in o.binding_namespaces):
            return allowed()
        try:
            pod = self.client.get(PODS, req.name, ns)
        except ApiError:
            return allowed()  # upstream: a cache error allows
        md = pod.get("metadata") or {}
        if any(k in (md.get("labels") or {}) for k in o.binding_bypass_labels) or \
                any(k in (md.get("annotations") or {}) for k in o.binding_bypass_annotations):
            return allowed()
        if o.binding_dry_run:
            return allowed("binding denied (dry run): username is not in the allowed list")
        return denied("binding denied: username is not in the allowed list")


HANDLER_BUILDERS = (
    HandlerBuilder(VALIDATE_POD, POD_VALIDATING_WEBHOOK,
                   lambda ctx: PodValidatingHandler(ctx.client, ctx.topology, ctx.gate)),
    HandlerBuilder(VALIDATE_POD_BINDING, POD_VALIDATING_WEBHOOK,
                   lambda ctx: BindingAdmissionHandler(ctx.client, ctx.options, ctx.gate)),
)


__all__ = ["HANDLER_BUILDERS", "BindingAdmissionHandler", "PodValidatingHandler",
           "colocation_errors"]
