"""cgreconcile's values (upstream `cgroup_reconcile_test.go`, `TestCgroupResourceReconcile_
calculateResources` and `Test_calculateAndUpdateResources` cases): which file of which kube-QoS,
pod and container dir gets which value, from NodeSLO classes and pod annotations. Pure
calculation; the writes are in cgreconcile_v2_test.py and cgreconcile_realcgroup_test.py."""

from __future__ import annotations

import json
from typing import Any

from api.slo.v1alpha1.defaults import default_resource_qos_strategy
from api.slo.v1alpha1.resource_qos import ResourceQOSStrategy
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.qosmanager.cgreconcile import PAGE_SIZE, CgroupReconcile, memory_high
from koordlet.qosmanager.framework import Context
from koordlet.qosmanager.testing import FakeStates, pod_with_containers
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.util.system.cgroup import MAX_INT64
from koordlet.util.system.cgroup_env import CgroupEnv
from pkg.features import koordlet_feature_gate

GI = 1 << 30
MAX = MAX_INT64
ENV = CgroupEnv()  # systemd layout; nothing is read or written here
G, BU, BE = (ENV.kube_qos_dir(q) for q in ("Guaranteed", "Burstable", "BestEffort"))


def make_pod(uid: str, qos: str | None, kube_qos: str, containers: list[tuple[dict, dict]],
             memory_qos: dict | None = None, phase: str = "Running") -> dict[str, Any]:
    annotations = {"koordinator.sh/memoryQOS": json.dumps(memory_qos)} if memory_qos else {}
    return pod_with_containers(uid, qos, kube_qos, containers, annotations, phase)


def dirs(pod: dict) -> tuple[str, list[str]]:
    uid = pod["metadata"]["uid"]
    pod_dir = ENV.pod_dir(pod["status"]["qosClass"], uid)
    return pod_dir, [ENV.container_dir(pod_dir, s["containerID"])
                     for s in pod["status"]["containerStatuses"]]


# upstream's fixtures: an LS pod of two 1Gi containers; a BE pod whose c0 has only a limit
LS_POD = make_pod("ls", "LS", "Burstable", [({"memory": "1Gi"}, {"memory": "1Gi"})] * 2)
BE_LIMIT_ONLY: tuple[dict, dict] = ({}, {"kubernetes.io/batch-memory": "1Gi"})
BE_REQ_LIMIT = ({"kubernetes.io/batch-memory": "1Gi"}, {"kubernetes.io/batch-memory": "1Gi"})


def be_pod(memory_qos: dict) -> dict:
    return make_pod("be", "BE", "BestEffort", [BE_LIMIT_ONLY, BE_REQ_LIMIT], memory_qos)


def strategy(**classes: dict) -> ResourceQOSStrategy:
    """Classes default to `{}` (a class without memoryQOS), as upstream's cases."""
    return ResourceQOSStrategy.model_validate(
        {"lsrClass": {}, "lsClass": {}, "beClass": {}, **classes})


def calculate(strat: ResourceQOSStrategy, pods: list[dict], node_memory: int = GI):
    ctx = Context(env=ENV, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(), feature_gate=koordlet_feature_gate.copy())
    levels = CgroupReconcile(ctx).calculate(strat, node_memory, pods)
    as_tuples = [[(w.resource_type, w.parent_dir, w.value) for w in level]
                 for level in (levels.qos, levels.pod, levels.container)]
    return tuple(as_tuples)


def writes(parent: str, *pairs: tuple[str, int]) -> list[tuple[str, str, int]]:
    return [(f"memory.{name}", parent, value) for name, value in pairs]


STATIC_BE = (("wmark_ratio", 95), ("wmark_scale_factor", 20), ("wmark_min_adj", 50),
             ("priority", 0), ("use_priority_oom", 0), ("oom.group", 0))


def test_no_pods_and_empty_classes_write_nothing() -> None:
    assert calculate(strategy(), []) == ([], [], [])
    pod = make_pod("p0", None, "BestEffort", [({}, {})])
    assert calculate(strategy(), [pod]) == ([], [], [])


def test_single_pod_using_pod_level_config() -> None:
    """BE pod, policy auto plus min 100 % / throttling 80 %: protection counts batch-memory
    requests (c0 has none), memory.high sits 80 % of the way from request to limit."""
    pod = be_pod({"policy": "auto", "minLimitPercent": 100, "lowLimitPercent": 0,
                  "throttlingPercent": 80, "wmarkRatio": 95, "wmarkScalePermill": 20,
                  "wmarkMinAdj": 50})
    pod_dir, (c0, c1) = dirs(pod)
    qos, pod_level, container = calculate(strategy(), [pod])
    assert qos == writes(G, ("min", GI), ("low", 0)) + writes(BE, ("min", GI), ("low", 0))
    assert pod_level == writes(pod_dir, ("min", GI), ("low", 0), *STATIC_BE)
    assert container == (
        writes(c0, ("min", 0), ("low", 0), ("high", GI * 80 // 100 // PAGE_SIZE * PAGE_SIZE),
               *STATIC_BE)
        + writes(c1, ("min", GI), ("low", 0), ("high", GI), *STATIC_BE))


def test_multiple_pods_sum_into_the_kube_qos_dirs() -> None:
    ls_class = {"memoryQOS": {"enable": True, "minLimitPercent": 0, "lowLimitPercent": 0,
                              "throttlingPercent": 0, "wmarkRatio": 0, "wmarkScalePermill": 50,
                              "wmarkMinAdj": 0}}
    be = be_pod({"policy": "auto", "minLimitPercent": 100, "lowLimitPercent": 0,
                 "throttlingPercent": 80})
    ls_dir, (ls0, ls1) = dirs(LS_POD)
    be_dir, _ = dirs(be)
    qos, pod_level, container = calculate(strategy(lsClass=ls_class), [LS_POD, be])
    assert qos == (writes(G, ("min", GI), ("low", 0)) + writes(BU, ("min", 0), ("low", 0))
                   + writes(BE, ("min", GI), ("low", 0)))
    ls_static = (("wmark_ratio", 0), ("wmark_scale_factor", 50), ("wmark_min_adj", 0))
    assert pod_level == (writes(ls_dir, ("min", 0), ("low", 0), *ls_static)
                         + writes(be_dir, ("min", GI), ("low", 0), *STATIC_BE))
    assert container[:12] == (writes(ls0, ("min", 0), ("low", 0), ("high", MAX), *ls_static)
                              + writes(ls1, ("min", 0), ("low", 0), ("high", MAX), *ls_static))


def test_memory_high_is_no_less_than_memory_min() -> None:
    pod = be_pod({"policy": "auto", "minLimitPercent": 50, "lowLimitPercent": 0,
                  "throttlingPercent": 40})
    pod_dir, (c0, c1) = dirs(pod)
    qos, pod_level, container = calculate(strategy(), [pod])
    assert qos == (writes(G, ("min", GI // 2), ("low", 0))
                   + writes(BE, ("min", GI // 2), ("low", 0)))
    assert container == (
        writes(c0, ("min", 0), ("low", 0), ("high", GI * 40 // 100 // PAGE_SIZE * PAGE_SIZE),
               *STATIC_BE)
        + writes(c1, ("min", GI // 2), ("low", 0), ("high", GI), *STATIC_BE))
    # an unlimited container on a node with less allocatable than its request: high would
    # fall below min, so it is raised to min
    big = make_pod("big", "LS", "Burstable", [({"memory": "1Gi"}, {})],
                   {"minLimitPercent": 100, "throttlingPercent": 50})
    _, _, container = calculate(strategy(), [big], node_memory=GI // 2)
    assert (("memory.high", dirs(big)[1][0], GI) in container
            and memory_high(GI, 0, GI // 2, 50) == 3 * GI // 4)


def test_low_is_raised_to_min_and_zero_throttling_means_max() -> None:
    pod = make_pod("ls2", "LS", "Burstable", [({"memory": "1Gi"}, {"memory": "2Gi"})],
                   {"minLimitPercent": 50, "lowLimitPercent": 20, "throttlingPercent": 0})
    pod_dir, (c0,) = dirs(pod)
    _, pod_level, container = calculate(strategy(), [pod])
    assert pod_level == writes(pod_dir, ("min", GI // 2), ("low", GI // 2))
    assert container == writes(c0, ("min", GI // 2), ("low", GI // 2), ("high", MAX))


def test_system_pod_using_the_default_config() -> None:
    """The merged default (every class `enable: false`) writes the "none" values; a SYSTEM pod
    gets wmark 0/50/0 and no memory.high limit."""
    pod = make_pod("sys", "SYSTEM", "Burstable", [({"memory": "1Gi"}, {"memory": "1Gi"})] * 2)
    pod_dir, (c0, c1) = dirs(pod)
    qos, pod_level, container = calculate(default_resource_qos_strategy(), [pod])
    oom = (("priority", 0), ("use_priority_oom", 0), ("oom.group", 0))
    assert qos == (writes(G, ("min", 0), ("low", 0), *oom)
                   + writes(BU, ("min", 0), ("low", 0), *oom) + writes(BE, *oom))
    static = (("wmark_ratio", 0), ("wmark_scale_factor", 50), ("wmark_min_adj", 0), *oom)
    assert pod_level == writes(pod_dir, ("min", 0), ("low", 0), *static)
    assert container == (writes(c0, ("min", 0), ("low", 0), ("high", MAX), *static)
                         + writes(c1, ("min", 0), ("low", 0), ("high", MAX), *static))


def test_node_enabled_class_config_and_disabled_class_reset() -> None:
    on = {"memoryQOS": {"enable": True, "minLimitPercent": 100, "lowLimitPercent": 100,
                        "throttlingPercent": 50, "priorityEnable": 1, "priority": 6,
                        "oomKillGroup": 1}}
    off = {"memoryQOS": {**on["memoryQOS"], "enable": False}}
    pod = make_pod("lsr", "LSR", "Guaranteed", [({"memory": "1Gi"}, {"memory": "2Gi"})])
    pod_dir, (c0,) = dirs(pod)
    qos, pod_level, container = calculate(strategy(lsrClass=on), [pod])
    assert qos == writes(G, ("min", GI), ("low", GI), ("priority", 6), ("use_priority_oom", 1),
                         ("oom.group", 1))
    assert container == writes(c0, ("min", GI), ("low", GI), ("high", GI + GI // 2),
                               ("priority", 6), ("use_priority_oom", 1), ("oom.group", 1))
    # enable: false → the "none" values, whatever else the class says
    qos, pod_level, container = calculate(strategy(lsrClass=off), [pod])
    none_oom = (("priority", 0), ("use_priority_oom", 0), ("oom.group", 0))
    assert qos == writes(G, ("min", 0), ("low", 0), *none_oom)
    assert container == writes(c0, ("min", 0), ("low", 0), ("high", MAX), ("wmark_ratio", 0),
                               ("wmark_scale_factor", 50), ("wmark_min_adj", 0), *none_oom)


def test_pod_policy_none_and_malformed_annotation() -> None:
    on = {"memoryQOS": {"enable": True, "minLimitPercent": 100}}
    off_pod = make_pod("n", "LS", "Burstable", [({"memory": "1Gi"}, {})], {"policy": "none"})
    _, pod_level, _ = calculate(strategy(lsClass=on), [off_pod])
    assert ("memory.min", dirs(off_pod)[0], 0) in pod_level
    bad = make_pod("bad", "LS", "Burstable", [({"memory": "1Gi"}, {})])
    bad["metadata"]["annotations"]["koordinator.sh/memoryQOS"] = "{not json"
    _, pod_level, _ = calculate(strategy(lsClass=on), [bad])
    assert pod_level == writes(dirs(bad)[0], ("min", GI))  # the node's config


def test_pods_neither_running_nor_pending_are_ignored() -> None:
    on = {"memoryQOS": {"enable": True, "minLimitPercent": 100}}
    done = make_pod("done", "BE", "BestEffort", [BE_REQ_LIMIT], phase="Succeeded")
    assert calculate(strategy(beClass=on), [done]) == ([], [], [])
    pending = make_pod("pend", "BE", "BestEffort", [BE_REQ_LIMIT], phase="Pending")
    qos, _, _ = calculate(strategy(beClass=on), [pending])
    assert qos == writes(G, ("min", GI)) + writes(BE, ("min", GI))


def test_a_class_missing_from_the_strategy_leaves_its_kube_qos_dir_alone() -> None:
    only_ls = ResourceQOSStrategy.model_validate(
        {"lsClass": {"memoryQOS": {"enable": True, "minLimitPercent": 100}}})
    pod = make_pod("ls3", "LS", "Burstable", [({"memory": "1Gi"}, {})])
    qos, pod_level, _ = calculate(only_ls, [pod])
    assert qos == writes(BU, ("min", GI))  # no lsrClass: kubepods is not written
    assert pod_level == writes(dirs(pod)[0], ("min", GI))


def test_one_strategy_across_rounds_follows_every_input_of_a_pod() -> None:
    """A pod's values are kept between rounds while their inputs stay: whatever changes (the
    pod in place, its annotation, a container started, the NodeSLO strategy, the node's
    memory, a pod gone), the next round has the values computed afresh."""
    ctx = Context(env=ENV, executor=ResourceUpdateExecutor(), metric_cache=MetricCache(),
                  states=FakeStates(), feature_gate=koordlet_feature_gate.copy())
    reconcile = CgroupReconcile(ctx)
    on = strategy(lsClass={"memoryQOS": {"enable": True, "minLimitPercent": 100,
                                         "throttlingPercent": 50}})
    pod = make_pod("ls", "LS", "Burstable", [({"memory": "1Gi"}, {"memory": "2Gi"})])
    pod_dir, (c0,) = dirs(pod)

    def level_values(strat: ResourceQOSStrategy, pods: list[dict], node_memory: int = GI):
        levels = reconcile.calculate(strat, node_memory, pods)
        return [{(w.resource_type, w.parent_dir): w.value for w in level}
                for level in (levels.qos, levels.pod, levels.container)]

    qos, pod_level, container = level_values(on, [pod])
    assert qos[("memory.min", BU)] == GI and pod_level[("memory.min", pod_dir)] == GI
    assert container[("memory.high", c0)] == GI + GI // 2
    assert level_values(on, [pod]) == [qos, pod_level, container]  # nothing changed

    # the request grows in place (the same dict, as an informer may hand it out)
    pod["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2Gi"
    qos, pod_level, container = level_values(on, [pod])
    assert qos[("memory.min", BU)] == 2 * GI and pod_level[("memory.min", pod_dir)] == 2 * GI
    assert container[("memory.high", c0)] == 2 * GI

    # an annotation turns the pod's memory QoS off
    pod["metadata"]["annotations"]["koordinator.sh/memoryQOS"] = '{"policy":"none"}'
    qos, pod_level, _ = level_values(on, [pod])
    assert qos[("memory.min", BU)] == 0 and pod_level[("memory.min", pod_dir)] == 0
    del pod["metadata"]["annotations"]["koordinator.sh/memoryQOS"]

    # a second container started: its dir gets its values
    pod["spec"]["containers"].append(
        {"name": "c1", "resources": {"requests": {"memory": "1Gi"}, "limits": {}}})
    c1 = ENV.container_dir(pod_dir, "containerd://c1")
    qos, _, container = level_values(on, [pod])
    assert qos[("memory.min", BU)] == 3 * GI and ("memory.min", c1) not in container
    pod["status"]["containerStatuses"].append({"name": "c1", "containerID": "containerd://c1"})
    qos, _, container = level_values(on, [pod])
    assert qos[("memory.min", BU)] == 3 * GI and container[("memory.min", c1)] == GI
    # an unlimited container is throttled against the node's allocatable memory
    assert container[("memory.high", c1)] == GI
    _, _, container = level_values(on, [pod], node_memory=3 * GI)
    assert container[("memory.high", c1)] == 2 * GI

    # a new NodeSLO strategy: half the request protected
    half = strategy(lsClass={"memoryQOS": {"enable": True, "minLimitPercent": 50}})
    qos, pod_level, _ = level_values(half, [pod])
    assert qos[("memory.min", BU)] == 3 * GI // 2
    assert pod_level[("memory.min", pod_dir)] == 3 * GI // 2

    # the pod gone: nothing of it is written, nor any sum of it
    assert level_values(half, []) == [{}, {}, {}]
