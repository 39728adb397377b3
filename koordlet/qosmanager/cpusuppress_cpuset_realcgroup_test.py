"""cpusuppress `cpuset` policy on this machine's real cgroup v1, in a test-owned subtree.

The kernel refuses a child cpuset wider than its parent (EINVAL) and a parent narrowed below a
child (EBUSY), so these writes only succeed in the right order: widening BE dir → pod →
container, narrowing container → pod → BE dir.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache, MetricSample
from koordlet.metricsadvisor.nodeinfo import read_cpu_topology
from koordlet.qosmanager.cpusuppress import CPUSuppress
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, node, node_slo, pod
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.cgroup_env import CgroupEnv
from koordlet.util.system.testing import make_real_cgroup_dir, real_cgroup_v1_tree
from pkg.features import koordlet_feature_gate


@pytest.fixture
def env() -> Iterator[CgroupEnv]:
    with real_cgroup_v1_tree() as env:
        yield env


def test_be_cpuset_widened_parents_first_and_narrowed_children_first(env: CgroupEnv) -> None:
    topology = read_cpu_topology()
    cpus = sorted(p.cpu_id for p in topology.processors)
    if len(cpus) < 2:
        pytest.skip("needs at least 2 CPUs")
    be_pod = env.pod_dir("BestEffort", "be-1")
    container = env.container_dir(be_pod, "c1")
    make_real_cgroup_dir(env, container)
    files = [
        Path(env.root, "cpuset", env.prefix, d, "cpuset.cpus")
        for d in (env.be_dir(), be_pod, container)
    ]
    for f in reversed(files):  # start narrow: only the last CPU, children first
        f.write_text(str(cpus[-1]))
    cache = MetricCache()
    cache.set(mt.NODE_CPU_INFO_KEY, topology)
    the_node = node(str(len(cpus)))
    states = FakeStates(node=the_node, node_slo=node_slo(True, policy="cpuset"),
                        pods=[pod("be-1", "BE", "BestEffort")])
    ctx = Context(env=env, executor=ResourceUpdateExecutor(), metric_cache=cache,
                  states=states, feature_gate=koordlet_feature_gate.copy())
    plugin = CPUSuppress(ctx)
    now = ctx.clock.now()
    cache.append([MetricSample(mt.NODE_CPU_USAGE, {}, now, 0.0)])
    plugin.run_once()
    # an idle node: the allowance is 65 % of the node, at least 2 CPUs; starting from 1 CPU
    # the set grows by at most 1 + ceil(10 % of the CPUs)
    want = max(-(-len(cpus) * 65 // 100), 2)
    want = min(want, 1 + -(-len(cpus) // 10))
    got = [f.read_text().strip() for f in files]
    assert len(set(got)) == 1 and got[0] != str(cpus[-1]), got
    assert len(_parse(got[0])) == want

    # the node reserves all but the last CPU; switching to cfsQuota recovers the BE cpuset to
    # what is left, narrowing the tree children first
    reserved = ",".join(str(c) for c in cpus[:-1])
    the_node["metadata"]["annotations"] = {
        "node.koordinator.sh/reservation": json.dumps({"reservedCPUs": reserved})
    }
    states.node_slo = node_slo(True, policy="cfsQuota")
    plugin.run_once()
    assert [f.read_text().strip() for f in files] == [str(cpus[-1])] * 3


def _parse(text: str) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
