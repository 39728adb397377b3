"""Filtering handlers turn updates that cross the filter into adds and deletes."""

from __future__ import annotations

from typing import Any

from pkg.client.informers.handlers import (
    EventHandlerFuncs,
    FilteringEventHandler,
    deleted_object,
)
from pkg.client.informers.store import DeletedFinalStateUnknown


def test_filtering_transitions() -> None:
    got: list[tuple[str, Any]] = []
    inner = EventHandlerFuncs(add=lambda o: got.append(("add", o["v"])),
                              update=lambda a, b: got.append(("update", b["v"])),
                              delete=lambda o: got.append(("delete", deleted_object(o)["v"])))
    h = FilteringEventHandler(lambda o: o["v"] > 0, inner)
    h.on_add({"v": 0}, True)
    h.on_add({"v": 1}, True)
    h.on_update({"v": 0}, {"v": 2})
    h.on_update({"v": 2}, {"v": 3})
    h.on_update({"v": 3}, {"v": -1})
    h.on_update({"v": -1}, {"v": -2})
    h.on_delete(DeletedFinalStateUnknown("k", {"v": 5}))
    h.on_delete({"v": -5})
    assert got == [("add", 1), ("add", 2), ("update", 3), ("delete", 3), ("delete", 5)]
