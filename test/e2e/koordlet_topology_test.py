"""koordlet's NodeResourceTopology report end to end: a real ``python -m koordlet.main`` for a
Node of this machine (real ``/sys`` and ``/proc``) under the chart's ``koordlet``
ServiceAccount, against the embedded API server serving the NodeResourceTopology CRD.

The object koordlet creates must describe THIS machine as ``lscpu`` does: every CPU's core,
socket and NUMA node in ``node.koordinator.sh/cpu-topology``, one ``node-<id>`` zone per NUMA
node holding that node's CPUs, and kubelet's defaults as the CPU manager policy.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from typing import Any

import pytest

from pkg.client.errors import ApiError
from pkg.client.resources import NODE_RESOURCE_TOPOLOGIES, NODES
from pkg.client.rest import Client
from pkg.util.cpuset import parse_cpuset
from test.e2e.cluster import wait_for
from test.e2e.conftest import Launch

pytestmark = pytest.mark.without_webhooks


def lscpu() -> list[tuple[int, int, int, int]]:
    """(cpu, core, socket, node) of every online CPU; a machine without NUMA is node 0."""
    out = subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET,NODE"], check=True, capture_output=True,
                         text=True).stdout
    rows = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cpu, core, socket, node = line.split(",")
        rows.append((int(cpu), int(core), int(socket), int(node or 0)))
    return rows


def reported(client: Client, node: str) -> dict[str, Any] | None:
    try:
        nrt = client.get(NODE_RESOURCE_TOPOLOGIES, node)
    except ApiError as e:
        if e.status == 404:
            return None
        raise
    annotations = nrt["metadata"].get("annotations") or {}
    return nrt if "node.koordinator.sh/cpu-topology" in annotations else None


def test_topology_of_this_machine_matches_lscpu(client: Client, koordlets: Launch) -> None:
    node = "topology-real"
    node_uid = client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                     "metadata": {"name": node}})["metadata"]["uid"]
    koordlets(node, "--node-topology-sync-interval=1s")
    nrt = wait_for(lambda: reported(client, node), timeout=30, interval=0.2,
                   what="NodeResourceTopology with the CPU topology")

    annotations = nrt["metadata"]["annotations"]
    detail = json.loads(annotations["node.koordinator.sh/cpu-topology"])["detail"]
    assert [(c["id"], c["core"], c["socket"], c["node"]) for c in detail] == lscpu()

    cpus_per_node = Counter(node_id for _, _, _, node_id in lscpu())
    zones = {z["name"]: {r["name"]: r for r in z["resources"]} for z in nrt["zones"]}
    assert sorted(zones) == sorted(f"node-{n}" for n in cpus_per_node)
    for n, count in cpus_per_node.items():
        cpu = zones[f"node-{n}"]["cpu"]
        assert cpu["capacity"] == cpu["allocatable"] == cpu["available"] == str(count)
        assert zones[f"node-{n}"]["memory"]["capacity"].endswith("Ki")
    assert all(z["type"] == "Node" for z in nrt["zones"])

    # No pod holds a cpuset: each NUMA node's CPUs are its share pool.
    pools = json.loads(annotations["node.koordinator.sh/cpu-shared-pools"])
    assert sum(len(parse_cpuset(p["cpuset"])) for p in pools) == len(lscpu())
    assert json.loads(annotations["kubelet.koordinator.sh/cpu-manager-policy"]) == {
        "policy": "none"}
    assert nrt["topologyPolicies"] == ["None"]
    assert nrt["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Koordinator"
    (owner,) = nrt["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Node", node, node_uid, True)

