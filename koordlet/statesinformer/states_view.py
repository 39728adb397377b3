"""The typed view of the states informer that strategies and hooks read (upstream
``pkg/koordlet/statesinformer/impl/states_nodeslo.go``: ``mergeNodeSLOSpec`` and the
``GetNodeSLO`` of ``statesinformer.StatesInformer``).

``StatesView(states)`` satisfies ``koordlet.qosmanager.framework.StatesInformer``:
``get_node()`` and ``get_all_pods()`` are the raw objects; ``get_node_slo()`` is the NodeSLO
parsed with the api model, its spec merged onto koordlet's defaults
(``api.slo.v1alpha1.defaults.default_node_slo_spec``) as upstream. The parse is cached per
``resourceVersion``; a NodeSLO the model rejects is logged once, naming the object and the
field, and the last good one is kept. A malformed ``spec.hostApplications`` entry (a field of
the wrong type, or a cgroup dir outside the cgroup root) is dropped alone, logged once naming
its index and field, so the other applications and the rest of the spec still apply.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from pydantic import ValidationError

from api.configuration.merge import merge_cfg
from api.errors import MalformedValueError
from api.slo.v1alpha1.defaults import default_node_slo_spec
from api.slo.v1alpha1.host_application import HostApplicationSpec
from api.slo.v1alpha1.nodeslo import NodeSLO
from koordlet.statesinformer.states_informer import PodMeta
from koordlet.util.system.cgroup_driver import CgroupDriver
from koordlet.util.system.host_app import host_app_relative_dir

log = logging.getLogger(__name__)


class RawStates(Protocol):
    node_name: str

    def get_node(self) -> dict[str, Any] | None: ...

    def get_node_slo(self) -> dict[str, Any] | None: ...

    def get_all_pods(self) -> list[PodMeta]: ...


def _fields(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())


def _host_app_error(entry: Any) -> str | None:
    """Why one ``hostApplications`` entry is malformed, naming the field; None when it is not."""
    try:
        app = HostApplicationSpec.model_validate(entry)
        # The base dirs are the same depth under either driver, so either one tells whether
        # the dir stays under the cgroup root.
        host_app_relative_dir(CgroupDriver.CGROUPFS, app)
    except ValidationError as e:
        return _fields(e)
    except MalformedValueError as e:
        return f"{e.key}: {e.reason}"
    return None


def _drop_malformed_host_apps(raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without its malformed host applications, each logged (once per parse)."""
    spec = raw.get("spec")
    if not isinstance(spec, dict):
        return raw
    apps = spec.get("hostApplications")
    if not isinstance(apps, list):
        return raw
    kept = []
    for i, entry in enumerate(apps):
        error = _host_app_error(entry)
        if error is None:
            kept.append(entry)
            continue
        name = entry.get("name") if isinstance(entry, dict) else None
        log.error("NodeSLO %s: spec.hostApplications[%d] (name %r) is malformed, skipped: %s",
                  (raw.get("metadata") or {}).get("name"), i, name, error)
    if len(kept) == len(apps):
        return raw
    return {**raw, "spec": {**spec, "hostApplications": kept}}


def parse_node_slo(raw: dict[str, Any]) -> NodeSLO:
    """The NodeSLO with its spec merged onto the defaults and its malformed host applications
    left out; raises ValidationError for anything else malformed."""
    slo = NodeSLO.model_validate(_drop_malformed_host_apps(raw))
    slo.spec = merge_cfg(default_node_slo_spec(), slo.spec)
    return slo


class StatesView:
    def __init__(self, states: RawStates) -> None:
        self.states = states
        self.node_name = states.node_name
        self._lock = threading.Lock()
        self._version: str | None = None
        self._last_good: NodeSLO | None = None

    def get_node(self) -> dict[str, Any] | None:
        return self.states.get_node()

    def get_all_pods(self) -> list[dict[str, Any]]:
        return [m.pod for m in self.states.get_all_pods()]

    def get_node_slo(self) -> NodeSLO | None:
        raw = self.states.get_node_slo()
        if raw is None:
            return self._last_good
        meta = raw.get("metadata") or {}
        version = str(meta.get("resourceVersion", ""))
        with self._lock:
            if version != self._version or not version:
                self._version = version
                try:
                    self._last_good = parse_node_slo(raw)
                except ValidationError as e:
                    log.error("NodeSLO %s (resourceVersion %s) is malformed, keeping the last "
                              "good one: %s", meta.get("name"), version, _fields(e))
            return self._last_good
