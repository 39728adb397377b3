"""Simulated nodes: what a kubelet shows the API, without containers.

Corresponds to the API-visible behaviour of upstream ``pkg/kubelet`` (node registration and
status, ``kubelet_node_status.go``; Lease heartbeats, ``pkg/kubelet/nodelease``; admission of
bound pods by resources, ``lifecycle/predicate.go``; the pod status manager; graceful deletion,
which ends with the kubelet deleting the pod with grace period 0).

A simulated node registers a Node with capacity, allocatable, labels, taints and Ready
conditions, renews its Lease in ``kube-node-lease``, moves pods bound to it to Running (or to
Failed with ``OutOf<resource>`` when they do not fit), to Succeeded after the duration the pod's
``sim.koordinator.sh/run-duration`` annotation asks for (``"30s"``, ``"2m"``, ``"1h"`` or plain
seconds), and finishes graceful deletion. Everything runs on the server's event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import errors
from .api import MERGE_PATCH, Api
from .bootstrap import store_new
from .meta import now_micro, now_rfc3339
from .resources import ResourceInfo
from .watch import Stored

RUN_DURATION = "sim.koordinator.sh/run-duration"
Obj = dict[str, Any]


def parse_duration(s: str) -> float | None:
    """Go-style durations ("1h2m3.5s", "300ms") or plain seconds; None if malformed."""
    s = s.strip()
    try:
        return float(s)
    except ValueError:
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", s)
    if not parts or "".join(n + u for n, u in parts) != s:
        return None
    mult = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * mult[u] for n, u in parts)


@dataclass
class NodeSpec:
    """What a simulated node registers with."""

    name: str
    cpu: str = "32"
    memory: str = "128Gi"
    pods: int = 110
    ephemeral_storage: str = "500Gi"
    extra: dict[str, str] = field(default_factory=dict)  # extended resources
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: list[Obj] = field(default_factory=list)
    allocatable: dict[str, str] | None = None  # defaults to the capacity
    address: str | None = None
    unschedulable: bool = False


class SimulatedNodes:
    """The kubelets of a set of simulated nodes."""

    def __init__(self, api: Api, lease_interval: float = 10.0,
                 status_interval: float = 60.0, start_delay: float = 0.0,
                 termination_delay: float = 0.0) -> None:
        self.api = api
        self.lease_interval = lease_interval
        self.status_interval = status_interval
        self.start_delay = start_delay
        self.termination_delay = termination_delay
        self.nodes: dict[str, NodeSpec] = {}
        self._ip_next: dict[str, int] = {}
        self._pending: set[tuple[str, ...]] = set()  # ("start"|"del", namespace, name, uid)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._heartbeat: asyncio.Task[None] | None = None
        self._pods = api.info("", "v1", "pods")
        self._nodes = api.info("", "v1", "nodes")
        self._leases = api.info("coordination.k8s.io", "v1", "leases")
        api.after_write.append(self._on_write)

    # -- registration -----------------------------------------------------------------------

    def _capacity(self, spec: NodeSpec) -> dict[str, str]:
        cap = {"cpu": spec.cpu, "memory": spec.memory, "pods": str(spec.pods),
               "ephemeral-storage": spec.ephemeral_storage, "hugepages-1Gi": "0",
               "hugepages-2Mi": "0"}
        cap.update(spec.extra)
        return cap

    def _node_object(self, spec: NodeSpec, index: int) -> Obj:
        now = now_rfc3339()
        cap = self._capacity(spec)
        labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                  "beta.kubernetes.io/arch": "amd64", **spec.labels}
        ip = spec.address or f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}"

        def cond(typ: str, status: str, reason: str, msg: str) -> Obj:
            return {"type": typ, "status": status, "lastHeartbeatTime": now,
                    "lastTransitionTime": now, "reason": reason, "message": msg}

        node: Obj = {
            "metadata": {"name": spec.name, "labels": labels,
                         "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                         **spec.annotations}},
            "spec": {},
            "status": {
                "capacity": cap,
                "allocatable": dict(spec.allocatable or cap),
                "conditions": [
                    cond("MemoryPressure", "False", "KubeletHasSufficientMemory",
                         "kubelet has sufficient memory available"),
                    cond("DiskPressure", "False", "KubeletHasNoDiskPressure",
                         "kubelet has no disk pressure"),
                    cond("PIDPressure", "False", "KubeletHasSufficientPID",
                         "kubelet has sufficient PID available"),
                    cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                ],
                "addresses": [{"type": "InternalIP", "address": ip},
                              {"type": "Hostname", "address": spec.name}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "machineID": hashlib.md5(spec.name.encode()).hexdigest(),
                    "systemUUID": hashlib.md5(spec.name.encode() + b"u").hexdigest(),
                    "bootID": hashlib.md5(spec.name.encode() + b"b").hexdigest(),
                    "kernelVersion": "6.1.0-sim", "osImage": "Simulated Linux",
                    "containerRuntimeVersion": "containerd://1.7.0-sim",
                    "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0",
                    "operatingSystem": "linux", "architecture": "amd64"},
            },
        }
        if spec.taints:
            node["spec"]["taints"] = spec.taints
        if spec.unschedulable:
            node["spec"]["unschedulable"] = True
        return node

    async def register(self, spec: NodeSpec) -> Stored:
        """Create the Node and its Lease (AlreadyExists if the name is taken)."""
        index = len(self.nodes) + 1
        st = await self.api.create(self._nodes, None, self._node_object(spec, index))
        self._run(spec, st, 2)
        return st

    async def register_or_resume(self, spec: NodeSpec) -> Stored:
        """Register the node, or resume the kubelet of the one a previous run on the same
        workdir stored: the stored Node is kept as it is, its Lease renewals and heartbeats
        carry on and its pods are looked after again."""
        st = self.api.collection(self._nodes).get(None, spec.name)
        if st is None:
            return await self.register(spec)
        self._run(spec, st, 2 + len(self.api.collection(self._pods).indexed(spec.name)))
        return st

    def _run(self, spec: NodeSpec, st: Stored, next_ip: int) -> None:
        self.nodes[spec.name] = spec
        self._ip_next[spec.name] = next_ip
        self._renew(spec.name, st.obj["metadata"]["uid"])
        self._start_heartbeat()
        # Pods bound before the node existed (or while its kubelet was down) start now.
        for p in self.api.collection(self._pods).indexed(spec.name):
            self._consider(p)

    async def remove(self, name: str) -> None:
        """Stop simulating a node and delete its Node object."""
        self.nodes.pop(name, None)
        try:
            await self.api.delete(self._nodes, None, name)
        except errors.ApiError as e:
            if e.code != 404:
                raise

    def set_ready(self, name: str, ready: bool) -> None:
        """Flip the node's Ready condition (a kubelet that stopped posting status)."""
        coll = self.api.collection(self._nodes)
        st = coll.get(None, name)
        if st is None:
            return
        new = st.copy()
        now = now_rfc3339()
        for c in new["status"]["conditions"]:
            if c["type"] == "Ready":
                status = "True" if ready else "Unknown"
                if c["status"] != status:
                    c["lastTransitionTime"] = now
                c["status"] = status
                c["reason"] = "KubeletReady" if ready else "NodeStatusUnknown"
                c["message"] = "kubelet is posting ready status" if ready else \
                    "Kubelet stopped posting node status."
        self._store(self._nodes, coll, new, st)

    # -- heartbeats -------------------------------------------------------------------------

    def _store(self, info: ResourceInfo, coll: Any, new: Obj, old: Stored | None) -> None:
        st = self.api.storage.update(coll, new, old) if old is not None else \
            self.api.storage.create(coll, new)
        self.api._finish_write(info, "MODIFIED" if old is not None else "ADDED", st)

    def _renew(self, name: str, node_uid: str | None = None) -> None:
        coll = self.api.collection(self._leases)
        old = coll.get("kube-node-lease", name)
        if old is None:
            store_new(self.api, self._leases, {
                "metadata": {"name": name, "namespace": "kube-node-lease",
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                  "name": name, "uid": node_uid or ""}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                         "renewTime": now_micro()}})
            return
        new = old.copy()
        new["spec"]["renewTime"] = now_micro()
        self._store(self._leases, coll, new, old)

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeats())

    async def _heartbeats(self) -> None:
        since_status = 0.0
        while self.nodes:
            await asyncio.sleep(self.lease_interval)
            since_status += self.lease_interval
            coll = self.api.collection(self._nodes)
            for name in list(self.nodes):
                self._renew(name)
                if since_status >= self.status_interval:
                    st = coll.get(None, name)
                    if st is not None:
                        new = st.copy()
                        now = now_rfc3339()
                        for c in new["status"].get("conditions") or []:
                            c["lastHeartbeatTime"] = now
                        self._store(self._nodes, coll, new, st)
            if since_status >= self.status_interval:
                since_status = 0.0

    # -- pods -------------------------------------------------------------------------------

    def _on_write(self, info: ResourceInfo, type_: str, st: Stored) -> None:
        if info.storage == ("", "pods") and type_ != "DELETED":
            self._consider(st)

    def _consider(self, st: Stored) -> None:
        pod = st.obj
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node not in self.nodes:
            return
        md = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        key = (md["namespace"], md["name"], md["uid"])
        if md.get("deletionTimestamp"):
            self._later(("del",) + key, self.termination_delay if phase in (
                "Pending", "Running") else 0.0, self._finish_deletion, key)
        elif phase == "Pending" or phase is None:
            self._later(("start",) + key, self.start_delay, self._start, key)

    def _later(self, tag: tuple[str, ...], delay: float, fn: Any, key: tuple[str, str, str]
               ) -> None:
        if tag in self._pending:
            return
        self._pending.add(tag)

        async def run() -> None:
            try:
                if delay > 0:
                    await asyncio.sleep(delay)
                await fn(key)
            except errors.ApiError:
                pass
            finally:
                self._pending.discard(tag)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _current(self, key: tuple[str, str, str]) -> Stored | None:
        st = self.api.collection(self._pods).get(key[0], key[1])
        if st is None or st.obj["metadata"]["uid"] != key[2]:
            return None
        return st

    async def _patch_status(self, key: tuple[str, str, str], status: Obj) -> None:
        await self.api.patch(self._pods, key[0], key[1], MERGE_PATCH,
                             orjson.dumps({"status": status}), subresource="status")

    def _fits(self, pod: Obj, node: str) -> tuple[str, str] | None:
        """(resource, message) when the pod does not fit next to the running pods."""
        from kubernetes.utils.quantity import parse_quantity

        st = self.api.collection(self._nodes).get(None, node)
        if st is None:
            return None
        alloc = st.obj["status"].get("allocatable") or {}
        used: dict[str, Any] = {}
        count = 0
        for other in self.api.collection(self._pods).indexed(node):
            o = other.obj
            if o["metadata"]["uid"] == pod["metadata"]["uid"]:
                continue
            if (o.get("status") or {}).get("phase") != "Running":
                continue
            count += 1
            for k, v in _requests(o).items():
                used[k] = used.get(k, 0) + parse_quantity(v)
        if "pods" in alloc and count + 1 > int(alloc["pods"]):
            return "pods", "Node didn't have enough resource: pods"
        for k, v in _requests(pod).items():
            if k not in alloc:
                continue
            want = parse_quantity(v)
            have = used.get(k, 0)
            cap = parse_quantity(alloc[k])
            if want + have > cap:
                return k, (f"Node didn't have enough resource: {k}, requested: {want}, "
                           f"used: {have}, capacity: {cap}")
        return None

    async def _start(self, key: tuple[str, str, str]) -> None:
        st = self._current(key)
        if st is None or st.obj["metadata"].get("deletionTimestamp"):
            return
        pod = st.obj
        node = pod["spec"]["nodeName"]
        now = now_rfc3339()
        node_st = self.api.collection(self._nodes).get(None, node)
        host_ip = next((a["address"] for a in (node_st.obj["status"].get("addresses") or [])
                        if a["type"] == "InternalIP"), "") if node_st else ""
        misfit = self._fits(pod, node)
        if misfit is not None:
            res, msg = misfit
            await self._patch_status(key, {"phase": "Failed", "reason": f"OutOf{res}",
                                           "message": f"Pod {msg}", "startTime": now})
            return
        n = self._ip_next.get(node, 2)
        self._ip_next[node] = n + 1
        idx = list(self.nodes).index(node) + 1 if node in self.nodes else 0
        pod_ip = f"10.{128 + idx // 256 % 128}.{idx % 256}.{n % 254 + 1}"

        def cstatus(c: Obj) -> Obj:
            cid = hashlib.sha256(f"{key[2]}/{c['name']}".encode()).hexdigest()
            return {"name": c["name"], "image": c.get("image", ""), "imageID": "",
                    "containerID": f"containerd://{cid}", "ready": True, "started": True,
                    "restartCount": 0, "state": {"running": {"startedAt": now}}}

        spec = pod["spec"]
        conds = [{"type": t, "status": "True", "lastProbeTime": None,
                  "lastTransitionTime": now}
                 for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                           "ContainersReady", "PodScheduled")]
        status = {
            "phase": "Running", "conditions": conds, "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}] if host_ip else [], "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}], "startTime": now,
            "containerStatuses": [cstatus(c) for c in spec.get("containers") or []],
        }
        if spec.get("initContainers"):
            status["initContainerStatuses"] = [
                {**cstatus(c), "ready": True, "started": False,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                          "startedAt": now, "finishedAt": now}}}
                for c in spec["initContainers"]]
        await self._patch_status(key, status)
        dur = (pod["metadata"].get("annotations") or {}).get(RUN_DURATION)
        seconds = parse_duration(dur) if dur else None
        if seconds is not None:
            self._later(("done",) + key, seconds, self._complete, key)

    async def _complete(self, key: tuple[str, str, str]) -> None:
        st = self._current(key)
        if st is None or (st.obj.get("status") or {}).get("phase") != "Running":
            return
        now = now_rfc3339()
        status = st.copy()["status"]
        status["phase"] = "Succeeded"
        for c in status.get("conditions") or []:
            if c["type"] in ("Ready", "ContainersReady"):
                c["status"] = "False"
                c["reason"] = "PodCompleted"
                c["lastTransitionTime"] = now
        for cs in status.get("containerStatuses") or []:
            started = ((cs.get("state") or {}).get("running") or {}).get("startedAt", now)
            cs["ready"] = False
            cs["started"] = False
            cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed",
                                          "startedAt": started, "finishedAt": now,
                                          "containerID": cs.get("containerID", "")}}
        await self._patch_status(key, status)

    async def _finish_deletion(self, key: tuple[str, str, str]) -> None:
        st = self._current(key)
        if st is None:
            return
        # The grace period is not waited out: the kubelet stops containers as soon as it can.
        await self.api.delete(self._pods, key[0], key[1],
                              {"gracePeriodSeconds": 0,
                               "preconditions": {"uid": key[2]}})


def _requests(pod: Obj) -> dict[str, str]:
    """Effective requests: sum over containers, max with each init container."""
    total: dict[str, Any] = {}
    from kubernetes.utils.quantity import parse_quantity

    spec = pod.get("spec") or {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            total[k] = total.get(k, 0) + parse_quantity(v)
    for c in spec.get("initContainers") or []:
        for k, v in ((c.get("resources") or {}).get("requests") or {}).items():
            q = parse_quantity(v)
            if q > total.get(k, 0):
                total[k] = q
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + parse_quantity(v)
    return {k: str(v) for k, v in total.items()}
