"""Event handlers: what an informer calls when objects are added, updated or deleted.

Corresponds to client-go ``tools/cache/controller.go``: ``ResourceEventHandler``,
``ResourceEventHandlerFuncs`` and ``FilteringResourceEventHandler``. ``on_delete`` may receive
a ``DeletedFinalStateUnknown`` tombstone (see ``store``) when the deletion happened while the
informer was not watching; ``deleted_object`` unwraps it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pkg.client.informers.store import DeletedFinalStateUnknown


class ResourceEventHandler(Protocol):
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None: ...

    def on_update(self, old: Any, new: Any) -> None: ...

    def on_delete(self, obj: Any) -> None: ...


@dataclass
class EventHandlerFuncs:
    """A handler from plain functions; missing ones ignore their events. ``add`` takes the
    object only (``ResourceEventHandlerFuncs.AddFunc``)."""

    add: Callable[[Any], None] | None = None
    update: Callable[[Any, Any], None] | None = None
    delete: Callable[[Any], None] | None = None

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: Any) -> None:
        if self.delete is not None:
            self.delete(obj)


class FilteringEventHandler:
    """Passes on only objects that satisfy ``filter``; an update that makes an object start
    (stop) satisfying it arrives as an add (a delete), as in client-go."""

    def __init__(self, filter: Callable[[Any], bool], handler: ResourceEventHandler) -> None:
        self.filter = filter
        self.handler = handler

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self.filter(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old: Any, new: Any) -> None:
        was, now = self.filter(old), self.filter(new)
        if was and now:
            self.handler.on_update(old, new)
        elif now:
            self.handler.on_add(new, False)
        elif was:
            self.handler.on_delete(old)

    def on_delete(self, obj: Any) -> None:
        if self.filter(deleted_object(obj)):
            self.handler.on_delete(obj)


def deleted_object(obj: Any) -> Any:
    """The object of a delete notification, unwrapping a tombstone."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


__all__ = [
    "EventHandlerFuncs", "FilteringEventHandler", "ResourceEventHandler", "deleted_object",
]
