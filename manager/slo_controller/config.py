"""The slo-controller-config cache shared by koord-manager's controllers.

Corresponds to upstream `pkg/slo-controller/config` (``colocation_cm_event_handler.go``) and
the ConfigMap handler of `pkg/slo-controller/nodeslo` (``nodeslo_cm_event_handler.go``): one
watch on the ``slo-controller-config`` ConfigMap (``--config-namespace``/``--slo-config-name``,
default ``koordinator-system/slo-controller-config``), every key parsed with
``api.configuration.parse_slo_controller_config_lenient``, and the controllers told when the
config in force changed.

    cache = SLOConfigCache(factory, recorder)            # before factory.start()
    cache.add_listener(lambda old, new: ...)            # e.g. enqueue every node
    if cache.available():                               # in reconcile
        cfg = cache.current()                           # an SLOControllerConfig

Rules, as upstream:

* only create/update events of the configured ConfigMap count; an update with identical
  ``data`` is ignored, and so is its deletion (the config in force stays);
* the ConfigMap absent (or a key missing) means the defaults, which is not an error;
* a malformed key never takes effect: that key keeps its last good value (the defaults if it
  never had one), ``errors()`` reports it until a good value arrives, and a Warning Event on
  the ConfigMap names the key and the error (reason ``ColocationCfgUnmarshalFailed`` for
  ``colocation-config``, ``SLOCfgUnmarshalFailed`` for every other key), plus a log line;
* ``available()`` is False until the ConfigMap (or its absence) has been seen once; a
  controller should do nothing before that;
* listeners ``fn(old, new)`` run (in the informer's handler thread) whenever the parsed config
  changed, with the previous and the new ``SLOControllerConfig``; they should only enqueue.

``current()`` returns a shared, immutable-by-convention object: callers must copy before
changing any of its models.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from api.configuration import (
    COLOCATION_CONFIG_KEY,
    CONFIG_NAMESPACE,
    SLO_CTRL_CONFIG_MAP,
    SLOControllerConfig,
    parse_slo_controller_config_lenient,
)
from pkg.client.informers import EventHandlerFuncs, SharedInformer, SharedInformerFactory
from pkg.client.resources import CONFIGMAPS
from pkg.events import WARNING, EventRecorder

log = logging.getLogger(__name__)

REASON_COLOCATION_CFG_UNMARSHAL_FAILED = "ColocationCfgUnmarshalFailed"
REASON_SLO_CFG_UNMARSHAL_FAILED = "SLOCfgUnmarshalFailed"

Listener = Callable[[SLOControllerConfig, SLOControllerConfig], None]


def unmarshal_failed_reason(key: str) -> str:
    """The Event reason upstream uses for a key that does not parse."""
    if key == COLOCATION_CONFIG_KEY:
        return REASON_COLOCATION_CFG_UNMARSHAL_FAILED
    return REASON_SLO_CFG_UNMARSHAL_FAILED


class SLOConfigCache:
    """The last good slo-controller-config, per key (see the module docstring)."""

    def __init__(self, informer_factory: SharedInformerFactory,
                 recorder: EventRecorder | None = None,
                 namespace: str = CONFIG_NAMESPACE, name: str = SLO_CTRL_CONFIG_MAP) -> None:
        self.namespace = namespace
        self.name = name
        self.recorder = recorder
        # One object only: a field selector keeps the watch (and the store) small.
        self.informer: SharedInformer = informer_factory.informer_for(
            CONFIGMAPS, namespace=namespace, field_selector=f"metadata.name={name}")
        self._lock = threading.RLock()
        self._config = SLOControllerConfig()
        self._errors: dict[str, str] = {}
        self._data: dict[str, Any] | None = None
        self._seen = False
        self._listeners: list[Listener] = []
        self.informer.add_event_handler(EventHandlerFuncs(
            add=self._on_configmap, update=lambda _old, new: self._on_configmap(new)))

    # -- reading --------------------------------------------------------------------------

    def current(self) -> SLOControllerConfig:
        """The config in force (defaults until the ConfigMap is seen)."""
        with self._lock:
            return self._config

    def errors(self) -> dict[str, str]:
        """Key → why its latest value was refused, for keys that keep an older value."""
        with self._lock:
            return dict(self._errors)

    def is_error(self, key: str) -> bool:
        """Whether ``key``'s latest value was refused (upstream's error status)."""
        with self._lock:
            return key in self._errors

    def available(self) -> bool:
        """Whether the ConfigMap, or its absence, has been seen once (IsCfgAvailable).

        Before the informer's handler got to the object, a synced informer store answers.
        """
        with self._lock:
            if self._seen:
                return True
        if not self.informer.has_synced():
            return False
        obj = self.informer.lister.get(self.name, self.namespace)
        if obj is None:
            with self._lock:
                self._seen = True  # NotFound counts as synced: the defaults are in force
            return True
        self._on_configmap(obj)
        return True

    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(old, new)`` after every change of the parsed config."""
        with self._lock:
            self._listeners.append(fn)

    # -- updating -------------------------------------------------------------------------

    def _on_configmap(self, cm: Mapping[str, Any]) -> None:
        metadata = cm.get("metadata") or {}
        if metadata.get("name") != self.name or metadata.get("namespace") != self.namespace:
            return
        data = dict(cm.get("data") or {})
        with self._lock:
            self._seen = True
            if data == self._data:
                return
            self._data = data
            old = self._config
            new, errors = parse_slo_controller_config_lenient(
                data, old, obj=f"configmap {self.namespace}/{self.name}")
            refused = {err.key: err.reason for err in errors}
            self._config = new
            self._errors = refused
            listeners = list(self._listeners) if new != old else []
        for err in errors:
            log.error("%s; keeping the last good %s", err, err.key)
            if self.recorder is not None:
                self.recorder.event(cm, WARNING, unmarshal_failed_reason(err.key),
                                    f"failed to parse {err.key}, keeping the last good "
                                    f"value: {err.reason}")
        for fn in listeners:
            try:
                fn(old, new)
            except Exception:  # noqa: BLE001 - one broken listener must not starve the others
                log.exception("slo-controller-config listener %r failed", fn)


__all__ = [
    "REASON_COLOCATION_CFG_UNMARSHAL_FAILED", "REASON_SLO_CFG_UNMARSHAL_FAILED", "Listener",
    "SLOConfigCache", "unmarshal_failed_reason",
]
