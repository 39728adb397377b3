"""The ElasticQuota status writer: the scheduler's view of each quota, written back to it.

Corresponds to upstream ``pkg/scheduler/plugins/elasticquota/controller.go`` (``Controller``,
``updateElasticQuotaStatusIfChanged``). Every second, for each ElasticQuota the informer holds
and the quota tree knows, it compares the tree's figures with what the object carries and, only
when something changed, merge-patches the annotations ``quota.scheduling.koordinator.sh/runtime``,
``/request``, ``/child-request``, ``/guaranteed``, ``/allocated``, ``/non-preemptible-request``,
``/non-preemptible-used`` (JSON ResourceLists as upstream's ``json.Marshal`` writes them) and
``status.used``. ElasticQuota has no status subresource, so ``status.used`` travels in the same
patch on the object. Figures are compared without their zero entries, as upstream's
``quotav1.Equals(RemoveZeros(a), RemoveZeros(b))``. A failed write is logged once per quota and
retried on the next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from api.extension.elastic_quota import (
    ANNOTATION_ALLOCATED,
    ANNOTATION_CHILD_REQUEST,
    ANNOTATION_GUARANTEED,
    ANNOTATION_NON_PREEMPTIBLE_REQUEST,
    ANNOTATION_NON_PREEMPTIBLE_USED,
    ANNOTATION_REQUEST,
    ANNOTATION_RUNTIME,
    format_resource_list,
    parse_quota_resource_list,
)
from api.extension.objects import KubeDict, annotations_of, metadata_of
from api.thirdparty.schedulerplugins.v1alpha1.elastic_quota import ElasticQuota
from pkg.client.errors import ApiError
from pkg.client.resources import ELASTIC_QUOTAS
from pkg.util.clock import Clock
from pkg.util.periodic import Periodic
from pkg.util.podresources import resource_list
from scheduler.frameworkext.interface import ClientSet
from scheduler.plugins.elasticquota.core import QuotaInfo, to_resource_list
from scheduler.plugins.elasticquota.core.runtime_quota_calculator import ResourceInts
from scheduler.plugins.elasticquota.managers import QuotaSource

log = logging.getLogger(__name__)

NAME = "ElasticQuotaController"
SYNC_PERIOD_SECONDS = 1.0


class QuotaLister(Protocol):
    """The ElasticQuota informer's lister (parsed JSON objects or ``ElasticQuota`` models)."""

    def list(self) -> Sequence[ElasticQuota | KubeDict]: ...


def _annotated_figures(summary: QuotaInfo) -> dict[str, ResourceInts]:
    return {
        ANNOTATION_RUNTIME: summary.runtime,
        ANNOTATION_REQUEST: summary.request,
        ANNOTATION_CHILD_REQUEST: summary.child_request,
        ANNOTATION_GUARANTEED: summary.guaranteed,
        ANNOTATION_ALLOCATED: summary.allocated,
        ANNOTATION_NON_PREEMPTIBLE_REQUEST: summary.non_preemptible_request,
        ANNOTATION_NON_PREEMPTIBLE_USED: summary.non_preemptible_used,
    }


def _non_zero(rl: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in rl.items() if v}


def _written(raw: Mapping[str, Any] | None) -> dict[str, int] | None:
    """A ResourceList as integers, None when it does not parse (then it is rewritten)."""
    try:
        return _non_zero(resource_list(raw))
    except (ValueError, ArithmeticError):
        return None


def status_patch(eq: KubeDict, summary: QuotaInfo) -> dict[str, Any] | None:
    """The merge patch that brings ``eq`` to the tree's figures; None when nothing changed."""
    annotations = annotations_of(eq)
    changed: dict[str, str] = {}
    for key, figures in _annotated_figures(summary).items():
        try:
            current: dict[str, int] | None = _written(parse_quota_resource_list(annotations, key))
        except ValueError:
            current = None  # malformed: ours replaces it
        if current != _non_zero(figures):
            changed[key] = format_resource_list(to_resource_list(figures))
    patch: dict[str, Any] = {}
    if changed:
        patch["metadata"] = {"annotations": changed}
    old_used = (eq.get("status") or {}).get("used") or {}
    if _written(old_used) != _non_zero(summary.used):
        used: dict[str, str | None] = dict(to_resource_list(summary.used))
        # A merge patch merges maps: names the quota no longer uses are removed explicitly.
        used.update({name: None for name in old_used if name not in used})
        patch["status"] = {"used": used}
    return patch or None


class ElasticQuotaController:
    """Writes every known quota's figures back to its ElasticQuota once a second."""

    def __init__(self, manager: QuotaSource, client: ClientSet, quotas: QuotaLister,
                 clock: Clock) -> None:
        self.manager = manager
        self.client = client
        self.quotas = quotas
        self.clock = clock
        # Quotas whose last write failed: their next failures are not logged again.
        self._failing: set[str] = set()
        self._loop = Periodic(NAME, self.sync, SYNC_PERIOD_SECONDS, clock)

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def sync(self) -> int:
        """One pass over the quotas; returns how many were written."""
        written = 0
        for eq in self.quotas.list():
            if self.sync_quota(eq):
                written += 1
        return written

    def sync_quota(self, quota: ElasticQuota | KubeDict) -> bool:
        eq = quota.to_dict() if isinstance(quota, ElasticQuota) else quota
        md = metadata_of(eq)
        name, namespace = md.get("name") or "", md.get("namespace") or ""
        summary = self.manager.quota_summary(name)
        if summary is None:
            log.debug("%s: quota %s/%s not in the quota tree yet", NAME, namespace, name)
            return False
        patch = status_patch(eq, summary)
        if patch is None:
            return False
        key = f"{namespace}/{name}"
        try:
            self.client.patch(ELASTIC_QUOTAS, name, patch, namespace or None)
        except ApiError as err:
            if key not in self._failing:
                log.error("%s: failed to update ElasticQuota %s: %s", NAME, key, err)
                self._failing.add(key)
            return False
        if key in self._failing:
            log.info("%s: updated ElasticQuota %s again", NAME, key)
            self._failing.discard(key)
        return True


__all__ = ["NAME", "ElasticQuotaController", "QuotaLister", "status_patch"]
