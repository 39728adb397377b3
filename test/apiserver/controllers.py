"""Controllers that run inside the server, for state clients expect the cluster to maintain.

Corresponds to the parts of kube-controller-manager that API clients observe directly: the
disruption controller (PodDisruptionBudget status) here, the garbage collector (``gc.py``),
the ReplicaSet and Deployment controllers (``workloads.py``). Namespace termination lives in
``api.py``. ``Debounced`` is their work queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from .api import Api
from .resources import ResourceInfo
from .subresources import refresh_pdbs
from .watch import Stored

PDB_GR = ("policy", "poddisruptionbudgets")
POD_GR = ("", "pods")
K = TypeVar("K", bound=Hashable)
log = logging.getLogger(__name__)


class Debounced(Generic[K]):
    """Keys marked dirty, synced one at a time by one task on the server's loop, after
    ``interval`` (writes in between coalesce). A sync's own writes may mark its key again:
    it then runs once more and finds nothing to do. A sync that fails is logged, not retried
    (the next write of the key marks it again); ``mark_after`` retries on purpose."""

    def __init__(self, sync: Callable[[K], Awaitable[None]], interval: float) -> None:
        self.sync = sync
        self.interval = interval
        self.dirty: set[K] = set()
        self._task: asyncio.Task[None] | None = None

    def mark(self, key: K) -> None:
        self.dirty.add(key)
        if self._task is None or self._task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return  # not serving yet: the first write once serving starts the task
            self._task = loop.create_task(self._run())

    def mark_after(self, key: K, delay: float) -> None:
        asyncio.get_running_loop().call_later(delay, self.mark, key)

    async def _run(self) -> None:
        while self.dirty:
            await asyncio.sleep(self.interval)
            keys, self.dirty = self.dirty, set()
            for key in keys:
                try:
                    await self.sync(key)
                except Exception:  # a bug in one sync must not stop the others
                    log.exception("in-server controller: syncing %s failed", key)


class DisruptionController:
    """Recomputes PDB status in namespaces where pods or PDBs changed (debounced)."""

    def __init__(self, api: Api, interval: float = 0.1) -> None:
        self.api = api
        self.queue: Debounced[str] = Debounced(self._refresh, interval)
        api.after_write.append(self._on_write)

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage == PDB_GR:
            self.queue.mark(st.obj["metadata"]["namespace"])
        elif info.storage == POD_GR:
            ns = st.obj["metadata"].get("namespace", "")
            pdbs = self.api.storage.collections.get(PDB_GR)
            if pdbs is not None and pdbs.namespace_count(ns):
                self.queue.mark(ns)

    async def _refresh(self, namespace: str) -> None:
        refresh_pdbs(self.api, namespace)


def install(api: Api) -> DisruptionController:
    return DisruptionController(api)
