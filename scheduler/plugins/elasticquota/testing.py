"""Test helpers: ElasticQuotas as the informers deliver them, pods charged to a quota, and a
scheduler configuration that runs ElasticQuota."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from api.extension.elastic_quota import (
    ANNOTATION_SHARED_WEIGHT,
    ANNOTATION_TOTAL_RESOURCE,
    LABEL_ALLOW_LENT_RESOURCE,
    LABEL_PREEMPTIBLE,
    LABEL_QUOTA_IGNORE_DEFAULT_TREE,
    LABEL_QUOTA_IS_PARENT,
    LABEL_QUOTA_IS_ROOT,
    LABEL_QUOTA_NAME,
    LABEL_QUOTA_PARENT,
    LABEL_QUOTA_TREE_ID,
)
from api.extension.objects import KubeDict
from pkg.util.clock import FakeClock
from scheduler.apis.config import load_scheduler_config
from scheduler.factory import build_scheduler
from scheduler.framework.binder import InMemoryBinder
from scheduler.framework.plugins.defaultpreemption.testing import (
    FakeClient,
    FakeRecorder,
    make_node,
    make_pod,
)
from scheduler.plugins.coscheduling.coscheduling import NAME as COSCHEDULING
from scheduler.plugins.coscheduling.coscheduling import Coscheduling
from scheduler.plugins.elasticquota.elasticquota import NAME, ElasticQuota


def make_quota(name: str, max_: Mapping[str, str], min_: Mapping[str, str] | None = None, *,
               parent: str = "", is_parent: bool = False, allow_lent: bool = True,
               shared_weight: Mapping[str, str] | None = None,
               namespace: str = "default") -> dict[str, Any]:
    labels = {}
    if parent:
        labels[LABEL_QUOTA_PARENT] = parent
    if is_parent:
        labels[LABEL_QUOTA_IS_PARENT] = "true"
    if not allow_lent:
        labels[LABEL_ALLOW_LENT_RESOURCE] = "false"
    annotations = {ANNOTATION_SHARED_WEIGHT: json.dumps(dict(shared_weight))} \
        if shared_weight else {}
    return {"apiVersion": "scheduling.sigs.k8s.io/v1alpha1", "kind": "ElasticQuota",
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": annotations},
            "spec": {"max": dict(max_), "min": dict(min_ or {})}}


def make_tree_quota(name: str, tree: str, max_: Mapping[str, str], *,
                    total: Mapping[str, str] | None = None, ignore_default_tree: bool = False,
                    **kw: Any) -> dict[str, Any]:
    """``make_quota`` in quota tree ``tree``; with ``total`` the tree's root quota (labels
    is-root, annotation total-resource) as koord-manager's ElasticQuotaProfile writes it."""
    quota = make_quota(name, max_, **kw)
    md = quota["metadata"]
    md["labels"][LABEL_QUOTA_TREE_ID] = tree
    if total is not None:
        md["labels"][LABEL_QUOTA_IS_ROOT] = "true"
        md["annotations"][ANNOTATION_TOTAL_RESOURCE] = json.dumps(dict(total))
    if ignore_default_tree:
        md["labels"][LABEL_QUOTA_IGNORE_DEFAULT_TREE] = "true"
    return quota


def make_quota_pod(name: str, quota: str = "", *, cpu: str = "1", memory: str = "1Gi",
                   priority: int = 0, node: str = "", preemptible: bool = True,
                   namespace: str = "default", start_time: str | None = None
                   ) -> dict[str, Any]:
    """A koord-scheduler pod charged to ``quota`` by its label (none: by its namespace)."""
    labels = {LABEL_QUOTA_NAME: quota} if quota else {}
    if not preemptible:
        labels[LABEL_PREEMPTIBLE] = "false"
    return make_pod(name, priority, cpu, memory, node, namespace, labels, start_time,
                    schedulerName="koord-scheduler")


def elasticquota_config(*, gangs: bool = False, job_preemption: bool = False,
                        default_preemption: bool = False, **args: Any) -> str:
    """A KubeSchedulerConfiguration (no leader election) whose one profile, koord-scheduler,
    runs ElasticQuota at PreFilter, PostFilter (instead of DefaultPreemption) and Reserve, with
    ``args`` (JSON names) as its ElasticQuotaArgs. With ``gangs``, Coscheduling runs too, in
    upstream's shipped order (before ElasticQuota at PreFilter, PostFilter and Reserve), with
    ``job_preemption`` its ``enablePreemption`` (the chart's default). ``default_preemption``
    keeps DefaultPreemption, after ElasticQuota (upstream's shipped scheduler-config)."""
    plugin_args = json.dumps(args) if args else "{}"
    post_filter = ("{disabled: [{name: DefaultPreemption}], enabled: ["
                   f"{'{name: Coscheduling}, ' if gangs else ''}{{name: ElasticQuota}}"
                   f"{', {name: DefaultPreemption}' if default_preemption else ''}]}}")
    cosched_args = ("  - name: Coscheduling\n    args: {enablePreemption: true}\n"
                    if gangs and job_preemption else "")
    cosched = "{name: Coscheduling}, " if gangs else ""
    gang_points = ("".join(f"    {p}: {{enabled: [{{name: Coscheduling}}]}}\n"
                           for p in ("preEnqueue", "permit", "preBind", "postBind"))
                   if gangs else "")
    return ("apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "leaderElection: {leaderElect: false}\n"
            "profiles:\n- schedulerName: koord-scheduler\n  plugins:\n"
            f"    preFilter: {{enabled: [{cosched}{{name: ElasticQuota}}]}}\n"
            f"    postFilter: {post_filter}\n"
            f"    reserve: {{enabled: [{cosched}{{name: ElasticQuota}}]}}\n"
            f"{gang_points}"
            "  pluginConfig:\n  - name: ElasticQuota\n"
            f"    args: {plugin_args}\n{cosched_args}")


class QuotaCluster:
    """A scheduler running ElasticQuota (and with ``gangs`` Coscheduling) with in-memory
    bindings; quotas, PodGroups, pods and nodes reach the plugins and the scheduler as their
    informers would deliver them."""

    def __init__(self, cpu: str = "8", *, gangs: bool = False, job_preemption: bool = False,
                 default_preemption: bool = False, **args: Any) -> None:
        self.binder = InMemoryBinder()
        self.recorder = FakeRecorder()
        self.client = FakeClient()
        self.clock = FakeClock()
        built = build_scheduler(load_scheduler_config(
            elasticquota_config(gangs=gangs, job_preemption=job_preemption,
                                default_preemption=default_preemption, **args)),
                                binder=self.binder, clock=self.clock, client=self.client,
                                recorder_factory=lambda _name: self.recorder, bind_workers=2)
        self.sched = built.scheduler
        self.handlers = built.handlers
        plugin = self.sched.profiles["koord-scheduler"].plugin(NAME)
        assert isinstance(plugin, ElasticQuota)
        self.plugin = plugin
        self.gangs: Coscheduling | None = None
        if gangs:
            gang_plugin = self.sched.profiles["koord-scheduler"].plugin(COSCHEDULING)
            assert isinstance(gang_plugin, Coscheduling)
            self.gangs = gang_plugin
        node = make_node("n1", cpu=cpu, memory="64Gi")
        plugin.feeder.node_handler().on_add(node, True)
        self.handlers.add_node(node)

    def add_quota(self, quota: KubeDict) -> None:
        self.plugin.feeder.on_quota_add(quota)

    def add_pod_group(self, pod_group: dict[str, Any]) -> None:
        assert self.gangs is not None
        self.gangs.cache.on_pod_group_add(pod_group)

    def add_pod(self, pod: dict[str, Any]) -> None:
        # The plugins' informer handlers are registered before the scheduler's own.
        self.plugin.feeder.on_pod_add(pod)
        if self.gangs is not None:
            self.gangs.cache.on_pod_add(pod)
        if pod["spec"]["nodeName"]:
            self.handlers.add_pod_to_cache(pod)
        else:
            self.handlers.add_pod_to_queue(pod)

    def schedule(self) -> dict[str, str]:
        """Schedule every pod in activeQ; the bindings so far."""
        while self.sched.schedule_one(timeout=0):
            pass
        assert self.sched.wait_for_bindings(30)
        return dict(self.binder.bindings)

    def failure(self, name: str) -> str:
        notes = [note for pod, _, _, reason, _, note in self.recorder.events
                 if pod == name and reason == "FailedScheduling"]
        assert notes, f"no FailedScheduling event for {name}"
        return notes[-1]

    def stop(self) -> None:
        if self.gangs is not None:
            # Members left waiting at Permit would go only at their (fake) timeout.
            for wp in self.sched.profiles["koord-scheduler"].waiting_pods():
                wp.reject(COSCHEDULING, "test over")
            self.sched.wait_for_bindings(30)
        self.sched.stop()


def cpu_pods(c: QuotaCluster, prefix: str, quota: str, n: int, **kw: Any) -> list[str]:
    """``n`` pending pods of ``quota`` named ``prefix0``...; their names."""
    names = [f"{prefix}{i}" for i in range(n)]
    for name in names:
        c.add_pod(make_quota_pod(name, quota, **kw))
    return names
