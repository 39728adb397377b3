"""ClusterColocationProfile mutation of new pods and Reservations.

Corresponds to upstream ``pkg/webhook/pod/mutating/cluster_colocation_profile.go``
(the Reservation webhook, upstream ``pkg/webhook/reservation/mutating``, shares it): matching by
``namespaceSelector`` and ``selector``, the probability draw, the mutation steps in
upstream's order, and the renaming of cpu/memory to ``kubernetes.io/batch-*`` / ``mid-*``
for batch and mid pods. Profiles apply in name order.
Unlike upstream, where a selector that fails to parse counts as a match (one bad profile turned
every pod in the cluster BE), a profile with an invalid ``selector`` or ``namespaceSelector``
(stored before the profile webhook refused it) matches nothing, and a Warning event
``InvalidSelector`` on the profile names the field, once per generation. Upstream's other quirk
is kept: a namespace that cannot be read counts as a match.
"""

from __future__ import annotations

import copy
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from api.config.v1alpha1 import ClusterColocationProfile
from api.extension.colocation_profile import should_skip_update_resources
from api.extension.priority import (
    LABEL_POD_PRIORITY,
    PriorityClass,
    format_sub_priority,
    get_pod_priority_class_with_default,
)
from api.extension.qos import LABEL_POD_QOS
from api.extension.resource import RESOURCE_NAME_MAP, translate_resource_quantity
from api.meta import LabelSelector
from pkg.client import ApiError
from pkg.client.resources import CLUSTER_COLOCATION_PROFILES, NAMESPACES, PRIORITY_CLASSES
from pkg.events import WARNING, EventRecorder
from pkg.util.labels import parse_selector
from pkg.util.validation import aggregate, go_value

from ..cached_reader import Reader
from ..clustercolocationprofile.validating import KIND, spec_selector_errors
from .strategic_patch import strategic_merge

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class MutationError(Exception):
    """A profile could not be applied; the webhook answers 500 with this message."""


def _empty(selector: LabelSelector | None) -> bool:
    return selector is None or (not selector.match_labels and not selector.match_expressions)


def _matches(selector: LabelSelector, labels: dict[str, str]) -> bool:
    # Only profiles whose selectors parse get here (ProfileMatcher.profiles).
    return parse_selector(selector).matches(labels)


def probability_percent(profile: ClusterColocationProfile) -> int:
    """``spec.probability`` scaled against 100 (``intstr.GetScaledValueFromIntOrPercent``);
    100 when unset."""
    value = profile.spec.probability
    if value is None:
        return 100
    if isinstance(value, int):
        return value
    if value.endswith("%"):
        try:
            return int(value[:-1])
        except ValueError:
            pass
    raise MutationError(f"clusterColocationProfile {profile.metadata.name}: spec.probability: "
                        f"invalid value {value!r}: must be an integer or a percentage")


@dataclass(slots=True)
class ProfileMatcher:
    """Lists the profiles and decides which apply to an object (reading through ``client``:
    the API client, or the webhook server's informer cache)."""

    client: Reader
    rand_intn: Callable[[int], int] = random.randrange
    recorder: EventRecorder | None = None
    # name → (uid, generation) of the invalid profiles already reported by an event.
    _reported: dict[str, tuple[str, int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def profiles(self) -> list[ClusterColocationProfile]:
        """The profiles that can match: malformed ones and those with an invalid selector
        are left out."""
        try:
            items = self.client.list_all(CLUSTER_COLOCATION_PROFILES).get("items") or []
        except ApiError as e:
            raise MutationError(f"failed to list ClusterColocationProfiles: {e}") from None
        out = []
        for item in items:
            spec = item.get("spec")
            errs = spec_selector_errors(spec) if isinstance(spec, dict) else []
            if errs:
                self._report_invalid(item, aggregate(errs))
                continue
            try:
                out.append(ClusterColocationProfile.model_validate(item))
            except ValidationError as e:
                name = (item.get("metadata") or {}).get("name", "")
                log.error("skipping malformed ClusterColocationProfile %s: %s", name, e)
        return sorted(out, key=lambda p: p.metadata.name or "")

    def _report_invalid(self, item: Obj, detail: str) -> None:
        md = item.get("metadata") or {}
        name = str(md.get("name") or "")
        seen = (str(md.get("uid") or ""), int(md.get("generation") or 0))
        with self._lock:
            if self._reported.get(name) == seen:
                return
            self._reported[name] = seen
        message = f"{KIND} {go_value(name)} (generation {seen[1]}) matches no pod: {detail}"
        log.error("%s", message)
        if self.recorder is not None:
            ref = {"apiVersion": "config.koordinator.sh/v1alpha1", "kind": KIND, "name": name,
                   "uid": seen[0], "resourceVersion": md.get("resourceVersion")}
            self.recorder.event(ref, WARNING, "InvalidSelector", message)

    def namespace_labels(self, namespace: str) -> dict[str, str] | None:
        try:
            ns = self.client.get(NAMESPACES, namespace)
        except ApiError:
            return None
        return dict((ns.get("metadata") or {}).get("labels") or {})

    def matching(self, namespace: str, labels: dict[str, str],
                 object_selector_only: bool = False) -> list[ClusterColocationProfile]:
        """Profiles whose selectors match, in name order."""
        out = []
        ns_labels: dict[str, str] | None = None
        for profile in self.profiles():
            spec = profile.spec
            if not object_selector_only and not _empty(spec.namespace_selector):
                assert spec.namespace_selector is not None
                if ns_labels is None:
                    ns_labels = self.namespace_labels(namespace)
                # A namespace that cannot be read counts as a match, as upstream.
                if ns_labels is not None and not _matches(spec.namespace_selector, ns_labels):
                    continue
            if not _empty(spec.selector):
                assert spec.selector is not None
                if not _matches(spec.selector, labels):
                    continue
            out.append(profile)
        return out

    def draw(self, profile: ClusterColocationProfile) -> bool:
        """Whether the profile applies this time (``rand.Intn(100) > percent`` skips)."""
        percent = probability_percent(profile)
        if percent == 0:
            return False
        return percent == 100 or self.rand_intn(100) <= percent


def _map_keys(values: dict[str, str], mapping: dict[str, str] | None) -> None:
    for old, new in (mapping or {}).items():
        values[new] = values.get(old, "")


def _dig(obj: Obj, path: tuple[str, ...]) -> Obj | None:
    found: Any = obj
    for key in path:
        found = found.get(key)
        if not isinstance(found, dict):
            return None
    return found


def apply_profile(client: Reader, obj: Obj, profile: ClusterColocationProfile,
                  pod_spec_path: tuple[str, ...] = ("spec",)) -> Obj:
    """The object with one profile's mutations. Labels and annotations go to the object's
    own metadata, scheduler and priority to the pod spec at ``pod_spec_path`` (``("spec",)``
    for a pod, ``("spec", "template", "spec")`` for a Reservation, whose template may be
    absent: then those steps are skipped, as upstream), the patch to the whole object."""
    md = obj.setdefault("metadata", {})
    spec = profile.spec
    labels: dict[str, str] = dict(md.get("labels") or {})
    annotations: dict[str, str] = dict(md.get("annotations") or {})
    labels.update(spec.labels or {})
    annotations.update(spec.annotations or {})
    _map_keys(labels, spec.label_keys_mapping)
    _map_keys(annotations, spec.annotation_keys_mapping)
    for key, suffix in (spec.label_suffixes or {}).items():
        if key in labels:
            labels[key] += suffix
    pod_spec = _dig(obj, pod_spec_path)
    if spec.scheduler_name and pod_spec is not None:
        pod_spec["schedulerName"] = spec.scheduler_name
    if spec.qos_class:
        labels[LABEL_POD_QOS] = spec.qos_class
    if spec.priority_class_name and pod_spec is not None:
        try:
            pc = client.get(PRIORITY_CLASSES, spec.priority_class_name)
        except ApiError as e:
            raise MutationError(
                f"clusterColocationProfile {profile.metadata.name}: spec.priorityClassName: "
                f"cannot get PriorityClass {spec.priority_class_name!r}: {e.message or e}"
            ) from None
        pod_spec["priorityClassName"] = spec.priority_class_name
        pod_spec["priority"] = int(pc.get("value") or 0)
        if pc.get("preemptionPolicy"):
            pod_spec["preemptionPolicy"] = pc["preemptionPolicy"]
        else:
            pod_spec.pop("preemptionPolicy", None)
    if spec.koordinator_priority is not None:
        labels[LABEL_POD_PRIORITY] = format_sub_priority(spec.koordinator_priority)
    if labels:
        md["labels"] = labels
    if annotations:
        md["annotations"] = annotations
    if spec.patch:
        if not isinstance(spec.patch, dict):
            raise MutationError(f"clusterColocationProfile {profile.metadata.name}: spec.patch: "
                                f"must be a JSON object")
        patched = strategic_merge(obj, spec.patch)
        obj.clear()
        obj.update(patched)
    return obj


def _rename(resources: Obj | None, names: dict[str, str]) -> set[str]:
    """Rename in place; returns the extended names written."""
    written: set[str] = set()
    if not resources:
        return written
    for native, extended in names.items():
        if native in resources:
            resources[extended] = translate_resource_quantity(extended, resources.pop(native))
            written.add(extended)
    return written


def replace_resources(pod_spec: Obj, priority_class: PriorityClass) -> None:
    """cpu/memory → batch or mid resources in every (init) container and the overhead; a
    renamed resource with a limit but no request gets the limit as request."""
    names = dict(RESOURCE_NAME_MAP.get(priority_class, {}))
    if not names:
        return
    for containers in ("initContainers", "containers"):
        for container in pod_spec.get(containers) or []:
            res = container.get("resources")
            if not res:
                continue
            _rename(res.get("requests"), names)
            for extended in _rename(res.get("limits"), names):
                requests = res.setdefault("requests", {})
                requests.setdefault(extended, res["limits"][extended])
    _rename(pod_spec.get("overhead"), names)


def mutate_by_profiles(client: Reader, matcher: ProfileMatcher, obj: Obj, namespace: str,
                       pod_spec_path: tuple[str, ...] = ("spec",), *,
                       object_selector_only: bool = False,
                       skip_resources: bool = False) -> Obj:
    """A copy of ``obj`` with every matching profile applied, then (for a pod, unless
    ``skip_resources``) resources renamed."""
    labels = dict((obj.get("metadata") or {}).get("labels") or {})
    profiles = matcher.matching(namespace, labels, object_selector_only)
    if not profiles:
        return obj
    mutated = copy.deepcopy(obj)
    for profile in profiles:
        if matcher.draw(profile):
            mutated = apply_profile(client, mutated, profile, pod_spec_path)
    skip = skip_resources or any(should_skip_update_resources(p.metadata.annotations)
                                 for p in profiles)
    if not skip:
        replace_resources(mutated.setdefault("spec", {}),
                          get_pod_priority_class_with_default(mutated))
    return mutated


__all__ = ["MutationError", "ProfileMatcher", "apply_profile", "mutate_by_profiles",
           "probability_percent", "replace_resources"]
