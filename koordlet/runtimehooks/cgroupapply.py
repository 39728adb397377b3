"""Hook results onto real cgroups (upstream `pkg/koordlet/runtimehooks/protocol`'s
`injectFor*` through `resourceexecutor`, and the pod loop of `reconciler/reconciler.go`).

:class:`CgroupApplier` turns :class:`CgroupUpdate` lists into executor updaters, one level per
dir depth (pod before container), and hands them to ``leveled_update_batch`` so a parent is
widened before its child and a child narrowed before its parent. ``oom_score_adj`` is virtual: it
is written to ``/proc/<pid>/oom_score_adj`` for each pid of the container's ``cgroup.procs``.
:class:`PodReconciler` applies :func:`plan_kube_qos` to the kube-QoS dirs and :func:`plan_pod` to
every running pod each round; :class:`HostAppReconciler` applies :func:`plan_host_app` to every
NodeSLO host application each round and as soon as the NodeSLO's list of applications changes.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence

from api.errors import MalformedValueError
from api.extension.objects import KubeDict
from api.slo.v1alpha1.host_application import HostApplicationSpec
from koordlet.resourceexecutor.executor import ResourceUpdateExecutor
from koordlet.resourceexecutor.updater import CgroupUpdater, new_cgroup_updater
from koordlet.runtimehooks.reconciler import CgroupUpdate, plan_host_app, plan_kube_qos, plan_pod
from koordlet.runtimehooks.rule import Rules
from koordlet.util.system.cgroup import CgroupError, cgroup_file_read
from koordlet.util.system.cgroup_env import CgroupEnv
from pkg.util.clock import Clock, RealClock

logger = logging.getLogger(__name__)

OOM_SCORE_ADJ = "oom_score_adj"
# Upstream's default --runtime-hooks-reconcile-interval.
DEFAULT_RECONCILE_INTERVAL_SECONDS = 10.0


class CgroupApplier:
    """The ``apply_updates`` of the proxy server and the writer of the reconciler."""

    def __init__(self, env: CgroupEnv, executor: ResourceUpdateExecutor,
                 proc_root: str = "/proc") -> None:
        self.env = env
        self.executor = executor
        self.proc_root = proc_root

    def __call__(self, updates: Sequence[CgroupUpdate]) -> list[CgroupError]:
        """Applies the writes; failures are logged and returned, never raised (a pod that went
        away mid-round must not stop the others)."""
        levels: dict[int, list[CgroupUpdater]] = {}
        oom: list[CgroupUpdate] = []
        errors: list[CgroupError] = []
        for update in updates:
            if update.file == OOM_SCORE_ADJ:
                oom.append(update)
                continue
            try:
                updater = new_cgroup_updater(self.env, update.file, update.dir, update.value)
            except CgroupError as e:
                logger.debug("skip %s of %s: %s", update.file, update.dir, e)
                continue
            levels.setdefault(update.dir.count("/"), []).append(updater)
        errors += self.executor.leveled_update_batch([levels[d] for d in sorted(levels)])
        for update in oom:
            self._set_oom_score_adj(update.dir, update.value)
        return errors

    def _set_oom_score_adj(self, container_dir: str, value: str) -> None:
        try:
            procs = cgroup_file_read(self.env.path("cgroup.procs", container_dir))
        except CgroupError as e:
            logger.debug("skip oom_score_adj of %s: %s", container_dir, e)
            return
        for pid in procs.split():
            path = os.path.join(self.proc_root, pid, OOM_SCORE_ADJ)
            try:
                with open(path, "w") as f:
                    f.write(value)
            except OSError as e:  # the process exited since cgroup.procs was read
                logger.debug("cannot write %s: %s", path, e)


class PodReconciler:
    """Reconciler mode for the kube-QoS, pod and container levels (upstream
    `reconcilePodCgroup` and the `kubeqos` level): every round, the planned writes of the
    kube-QoS dirs and of each running pod go through the applier. ``pods`` returns the node's
    current pods."""

    def __init__(self, pods: Callable[[], Iterable[KubeDict]], rules: Rules,
                 applier: CgroupApplier, interval: float = DEFAULT_RECONCILE_INTERVAL_SECONDS,
                 clock: Clock | None = None) -> None:
        self.pods = pods
        self.rules = rules
        self.applier = applier
        self.interval = interval
        self.clock = clock or RealClock()

    def reconcile_once(self) -> list[CgroupError]:
        errors = self.applier(plan_kube_qos(self.rules, self.applier.env.driver))
        for pod in self.pods():
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            try:
                updates = plan_pod(pod, self.rules, self.applier.env.driver)
            except (MalformedValueError, ValueError) as e:
                meta = pod.get("metadata", {})
                logger.info("skip pod %s/%s: %s", meta.get("namespace"), meta.get("name"), e)
                continue
            errors += self.applier(updates)
        return errors

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.reconcile_once()
            except Exception:  # one bad round must not end reconciliation
                logger.exception("runtime hooks reconcile round failed")
            self.clock.sleep(self.interval, stop)


class HostAppReconciler:
    """Reconciler mode for host applications (upstream `hostReconciler`). ``apps`` returns the
    NodeSLO's current host applications (statesinformer's view, malformed ones dropped)."""

    def __init__(self, apps: Callable[[], Sequence[HostApplicationSpec]], rules: Rules,
                 applier: CgroupApplier, interval: float = DEFAULT_RECONCILE_INTERVAL_SECONDS,
                 clock: Clock | None = None) -> None:
        self.apps = apps
        self.rules = rules
        self.applier = applier
        self.interval = interval
        self.clock = clock or RealClock()
        self._seen: list[HostApplicationSpec] | None = None

    def reconcile_once(self) -> list[CgroupError]:
        errors: list[CgroupError] = []
        apps = list(self.apps())
        self._seen = apps
        for app in apps:
            try:
                updates = plan_host_app(app, self.rules, self.applier.env.driver)
            except MalformedValueError as e:
                logger.info("skip host application %s: %s", app.name, e)
                continue
            errors += self.applier(updates)
        return errors

    def on_node_slo(self, rtype: object, target: object) -> None:
        """The statesinformer ``NodeSLOSpec`` callback: reconcile now when the applications
        changed (upstream `appRefreshCallback`), else leave it to the next round."""
        if list(self.apps()) != self._seen:
            logger.info("host applications changed, reconciling their cgroups")
            self.reconcile_once()

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.reconcile_once()
            except Exception:  # one bad round must not end reconciliation
                logger.exception("host application reconcile round failed")
            self.clock.sleep(self.interval, stop)
