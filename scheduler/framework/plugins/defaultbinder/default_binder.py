"""DefaultBinder: bind the pod to the chosen node through the handle's Binder.

Corresponds to kubernetes ``pkg/scheduler/framework/plugins/defaultbinder``: upstream POSTs a
``v1.Binding`` with the clientset; here ``handle.binder`` (``scheduler.framework.binder``) does,
with the annotations PreBind plugins deferred to it, or records the binding in benchmarks. A
failure becomes an Error status (``AsStatus``). A Reservation's reserve pod exists only in the
scheduler: DefaultBinder skips it (the Reservation plugin's Bind writes the Reservation), as
upstream's reservation-aware binding does.
"""

from __future__ import annotations

import logging

from pkg.util.reservation import is_reserve_pod
from scheduler.framework.binder import binding_annotations
from scheduler.framework.cycle_state import CycleState
from scheduler.framework.interface import BindPlugin
from scheduler.framework.status import Code, Status
from scheduler.framework.types import PodInfo

log = logging.getLogger(__name__)

NAME = "DefaultBinder"


class DefaultBinder(BindPlugin):
    name = NAME
    carries_annotations = True

    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if is_reserve_pod(pod.pod):
            return Status(Code.SKIP)
        log.debug("Attempting to bind pod to node pod=%s node=%s", pod.key, node_name)
        binder = self.handle.binder
        if binder is None:
            return Status(Code.ERROR, "the scheduler has no binder")
        try:
            binder.bind(pod, node_name, binding_annotations(state))
        except Exception as err:  # noqa: BLE001 - any failure fails this binding cycle
            return Status.as_error(err)
        return None
