"""Controllers that run inside the server, for state clients expect the cluster to maintain.

Corresponds to the parts of kube-controller-manager that API clients observe directly: the
disruption controller (PodDisruptionBudget status). Namespace termination lives in ``api.py``.
"""

from __future__ import annotations

import asyncio

from .api import Api
from .resources import ResourceInfo
from .subresources import refresh_pdbs
from .watch import Stored

PDB_GR = ("policy", "poddisruptionbudgets")
POD_GR = ("", "pods")


class DisruptionController:
    """Recomputes PDB status in namespaces where pods or PDBs changed (debounced)."""

    def __init__(self, api: Api, interval: float = 0.1) -> None:
        self.api = api
        self.interval = interval
        self.dirty: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._pdb_namespaces: dict[str, int] = {}
        api.after_write.append(self._on_write)

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage == PDB_GR:
            ns = st.obj["metadata"]["namespace"]
            self.dirty.add(ns)
        elif info.storage == POD_GR:
            ns = st.obj["metadata"].get("namespace", "")
            pdbs = self.api.storage.collections.get(PDB_GR)
            if pdbs is None or not pdbs.namespace_count(ns):
                return
            self.dirty.add(ns)
        else:
            return
        self._kick()

    def _kick(self) -> None:
        if self._task is None or self._task.done():
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._task = loop.create_task(self._run())

    async def _run(self) -> None:
        while self.dirty:
            await asyncio.sleep(self.interval)
            namespaces, self.dirty = self.dirty, set()
            for ns in namespaces:
                refresh_pdbs(self.api, ns)
            # refresh_pdbs' own writes re-marked the namespaces; they are already current.
            self.dirty -= namespaces


def install(api: Api) -> DisruptionController:
    return DisruptionController(api)
