"""CoreSched hook (upstream `pkg/koordlet/runtimehooks/hooks/coresched`, gate `CoreSched`, off by
default): Linux core scheduling cookies for the processes of pods, by group.

Its rule (`rule.go`), from NodeSLO's resourceQOSStrategy when `policies.cpuPolicy` is
`coreSched`: per QoS class whether pods get a cookie (`cpuQOS.enable`) and whether the class is
an expeller (`cpuQOS.coreExpeller`, its groups get the `-expeller` suffix); pods without the QoS
label go by kube QoS (Guaranteed: the LSR class when it is enabled, else LS; Burstable: LS;
BestEffort: BE). A pod's group (`helper.go` `getPodEnabledAndGroup`) is its
`koordinator.sh/core-sched-group-id` label (`""` when absent); policy label `exclusive` makes the
pod's UID its group, `none` turns core scheduling off for it. SYSTEM pods (koordlet among
them) are left alone: upstream expects them on the default cookie.

:class:`CoreSched` applies the rule to the processes (`cgroup.procs`) of each pod's containers,
oldest pod first (upstream `refreshForAllPods`): the first container of a group gets a new
cookie, the others get it shared from a process of the group that still holds it (a new one
when none does), and a disabled pod's processes are reset to the default cookie 0. The kernel
calls sit behind :class:`CoreSchedOps`; :class:`PrctlCoreSched` makes them with prctl(2)
`PR_SCHED_CORE`. Where the kernel has no core scheduling (prctl says EINVAL and there is no
Anolis sysctl `kernel.sched_core`), :func:`probe_supported` says so in one line and nothing is
done.

Not done here: loading the cookies processes already hold when koordlet starts (upstream
`LoadAllCookies`; a restarted koordlet gives each group a new cookie), the sandbox container's
processes, Anolis' `sched_features` switch, and the kube-QoS/pod `cpu.idle` of `schedIdle`.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from api.extension.objects import KubeDict
from api.extension.pod_qos import CoreSchedPolicy, get_core_sched_group_id, get_core_sched_policy
from api.extension.qos import (
    KubeQoSClass,
    QoSClass,
    get_kube_qos_class,
    get_pod_qos_class_raw,
)
from api.slo.v1alpha1 import NodeSLOSpec
from api.slo.v1alpha1.resource_qos import CPUQOSPolicy
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.runtimehooks.hooks.hooks import RuntimeHook
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.util.system.cgroup import CgroupDirNotExistError, CgroupError
from koordlet.util.system.cgroup_env import CgroupEnv

if TYPE_CHECKING:
    from koordlet.runtimehooks.rule import Rules

logger = logging.getLogger(__name__)

EXPELLER_GROUP_SUFFIX = "-expeller"
DEFAULT_COOKIE = 0
# Relative to the proc root (upstream `KernelSchedCore`, Anolis kernels).
SYSCTL_SCHED_CORE = "sys/kernel/sched_core"

# prctl(2) PR_SCHED_CORE and its commands and scopes (include/uapi/linux/prctl.h).
PR_SCHED_CORE = 62
PR_SCHED_CORE_GET = 0
PR_SCHED_CORE_CREATE = 1
PR_SCHED_CORE_SHARE_TO = 2
PR_SCHED_CORE_SHARE_FROM = 3
SCOPE_THREAD = 0
SCOPE_THREAD_GROUP = 1


@dataclass(slots=True, frozen=True)
class ClassParam:
    """One QoS class's part of the rule (upstream `Param`)."""

    enabled: bool = False
    expeller: bool = False


@dataclass(slots=True, frozen=True)
class CoreSchedRule:
    """Per Koordinator QoS class and per kube QoS (for pods without the label); ``enable`` is
    the node-level switch: some class is enabled."""

    enable: bool = False
    by_qos: dict[QoSClass, ClassParam] = field(default_factory=dict)
    by_kube_qos: dict[str, ClassParam] = field(default_factory=dict)

    @classmethod
    def from_node_slo(cls, spec: NodeSLOSpec) -> CoreSchedRule:
        strategy = spec.resource_qos_strategy
        policies = getattr(strategy, "policies", None)
        core_sched = (getattr(policies, "cpu_policy", None) or "") == CPUQOSPolicy.CORE_SCHED

        def param(name: str) -> ClassParam:
            qos = getattr(strategy, f"{name}_class", None) if strategy else None
            cfg = getattr(qos, "cpu_qos", None)
            if not core_sched or cfg is None:
                return ClassParam()
            return ClassParam(bool(cfg.enable), bool(cfg.core_expeller))

        lsr, ls, be = param("lsr"), param("ls"), param("be")
        return cls(
            enable=lsr.enabled or ls.enabled or be.enabled,
            by_qos={QoSClass.LSE: lsr, QoSClass.LSR: lsr, QoSClass.LS: ls, QoSClass.BE: be},
            by_kube_qos={KubeQoSClass.GUARANTEED: lsr if lsr.enabled else ls,
                         KubeQoSClass.BURSTABLE: ls, KubeQoSClass.BEST_EFFORT: be},
        )

    def pod_param(self, qos: QoSClass, kube_qos: str) -> ClassParam:
        if not self.enable:
            return ClassParam()
        return self.by_qos.get(qos) or self.by_kube_qos.get(kube_qos) or ClassParam()


def pod_enabled_and_group(rule: CoreSchedRule, pod: KubeDict) -> tuple[bool, str]:
    """Whether the pod gets a cookie, and its group (upstream `getPodEnabledAndGroup`)."""
    param = rule.pod_param(get_pod_qos_class_raw(pod), get_kube_qos_class(pod))
    enabled, group = param.enabled, get_core_sched_group_id(pod)
    policy = get_core_sched_policy(pod)
    if policy is CoreSchedPolicy.EXCLUSIVE:
        group = (pod.get("metadata") or {}).get("uid", "")
    elif policy is CoreSchedPolicy.NONE:
        enabled = False
    if param.expeller:
        group += EXPELLER_GROUP_SUFFIX
    return enabled, group


class CoreSchedOps(Protocol):
    """The kernel's core scheduling (upstream `CoreSchedExtendedInterface`); raise OSError."""

    def get(self, pid: int) -> int:
        """The cookie of thread ``pid`` (0: the default one)."""
        ...

    def create(self, pid: int) -> None:
        """A new cookie for the thread group ``pid``."""
        ...

    def assign(self, pid_from: int, pids: Sequence[int]) -> list[int]:
        """The cookie of thread ``pid_from`` onto the thread groups ``pids``; the failed ones."""
        ...

    def clear(self, pids: Sequence[int]) -> list[int]:
        """The default cookie onto the thread groups ``pids``; the failed ones."""
        ...


class PrctlCoreSched:
    """:class:`CoreSchedOps` by prctl(2). Sharing goes through a short-lived relay thread that
    pulls the cookie and pushes it on (a new thread holds the default cookie), so koordlet's
    own threads keep the default cookie."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)

    def _prctl(self, cmd: int, pid: int, scope: int, cookie: ctypes.c_uint64 | None = None) -> None:
        arg = ctypes.byref(cookie) if cookie is not None else ctypes.c_ulong(0)
        if self._libc.prctl(PR_SCHED_CORE, ctypes.c_ulong(cmd), ctypes.c_ulong(pid),
                            ctypes.c_ulong(scope), arg) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"prctl(PR_SCHED_CORE, {cmd}, {pid}): {os.strerror(code)}")

    def get(self, pid: int) -> int:
        cookie = ctypes.c_uint64(0)
        self._prctl(PR_SCHED_CORE_GET, pid, SCOPE_THREAD, cookie)
        return cookie.value

    def create(self, pid: int) -> None:
        self._prctl(PR_SCHED_CORE_CREATE, pid, SCOPE_THREAD_GROUP)

    def assign(self, pid_from: int, pids: Sequence[int]) -> list[int]:
        return self._relay(pids, pid_from)

    def clear(self, pids: Sequence[int]) -> list[int]:
        return self._relay(pids, None)

    def _relay(self, pids: Sequence[int], pid_from: int | None) -> list[int]:
        failed: list[int] = []

        def relay() -> None:
            try:
                if pid_from is not None:
                    self._prctl(PR_SCHED_CORE_SHARE_FROM, pid_from, SCOPE_THREAD)
            except OSError:
                failed.extend(pids)
                return
            for pid in pids:
                try:
                    self._prctl(PR_SCHED_CORE_SHARE_TO, pid, SCOPE_THREAD_GROUP)
                except OSError:
                    failed.append(pid)

        thread = threading.Thread(target=relay, name="core-sched-relay")
        thread.start()
        thread.join()
        return failed


def probe_supported(ops: CoreSchedOps, proc_root: str) -> bool:
    """Whether the kernel has core scheduling (upstream `EnableCoreSchedIfSupported`): the
    Anolis sysctl `kernel.sched_core`, switched on when off, or prctl answering on this
    process. Logs once when it has not."""
    sysctl = os.path.join(proc_root, SYSCTL_SCHED_CORE)
    try:
        with open(sysctl, "r+") as f:
            if f.read().strip() != "1":
                f.seek(0)
                f.write("1")
        return True
    except FileNotFoundError:
        pass
    except OSError as e:
        logger.warning("CoreSched: cannot switch on %s: %s", sysctl, e)
        return False
    try:
        ops.get(0)  # pid 0: this thread
    except OSError as e:
        reason = ("the kernel lacks it (CONFIG_SCHED_CORE)" if e.errno == errno.EINVAL
                  else str(e))
        logger.info("CoreSched: no core scheduling on this node (%s, no %s): cookies are left "
                    "as they are", reason, sysctl)
        return False
    return True


@dataclass(slots=True)
class _GroupCookie:
    """A group's cookie and the processes known to hold it (upstream `CookieCacheEntry`)."""

    cookie: int
    pids: set[int]


class CoreSched:
    """Applies the rule to the processes of the pods (upstream `ruleUpdateCb`,
    `SetContainerCookie`). ``pids`` reads a container dir's processes."""

    def __init__(self, env: CgroupEnv, ops: CoreSchedOps,
                 pids: Callable[[str], list[int]] | None = None) -> None:
        self.env = env
        self.ops = ops
        reader = CgroupReader.for_env(env)
        self.pids = pids or reader.read_cpu_procs
        self.groups: dict[str, _GroupCookie] = {}

    def refresh(self, rule: CoreSchedRule | None, pods: Iterable[KubeDict]) -> None:
        """Every running pod's containers, oldest pod first; a failure is logged and the
        others go on."""
        if rule is None:
            return
        ordered = sorted(pods, key=lambda p: (p.get("metadata") or {}).get(
            "creationTimestamp") or "")
        for pod in ordered:
            if get_pod_qos_class_raw(pod) is QoSClass.SYSTEM:
                continue
            if (pod.get("status") or {}).get("phase") not in ("Running", "Pending"):
                continue
            enabled, group = pod_enabled_and_group(rule, pod)
            for container_dir in self._container_dirs(pod):
                try:
                    pids = self.pids(container_dir)
                except CgroupDirNotExistError:
                    continue  # not started yet, or gone
                except (CgroupError, OSError, ValueError) as e:
                    logger.warning("CoreSched: cannot read the processes of %s: %s",
                                   container_dir, e)
                    continue
                if pids and enabled:
                    self._enable(group, pids)
                elif pids:
                    self._disable(pids)

    def _container_dirs(self, pod: KubeDict) -> list[str]:
        md = pod.get("metadata") or {}
        pod_dir = self.env.pod_dir(get_kube_qos_class(pod), md.get("uid", ""))
        status = pod.get("status") or {}
        statuses = (status.get("initContainerStatuses") or []) + (
            status.get("containerStatuses") or [])
        return [self.env.container_dir(pod_dir, s["containerID"]) for s in statuses
                if s.get("containerID") and "running" in (s.get("state") or {})]

    def _enable(self, group: str, pids: list[int]) -> None:
        entry = self.groups.get(group)
        if entry is not None:
            if entry.pids.issuperset(pids):
                return
            sibling = self._holder(entry)
            if sibling is not None:
                failed = set(self.ops.assign(sibling, pids))
                entry.pids.update(p for p in pids if p not in failed)
                return
            del self.groups[group]  # no process holds the cookie any more: a new one
        try:
            self.ops.create(pids[0])
            cookie = self.ops.get(pids[0])
        except OSError as e:
            logger.warning("CoreSched: cannot create a cookie for group %r: %s", group, e)
            return
        failed = set(self.ops.assign(pids[0], pids[1:]))
        self.groups[group] = _GroupCookie(cookie, {p for p in pids if p not in failed})
        logger.info("CoreSched: group %r got cookie %d", group, cookie)

    def _holder(self, entry: _GroupCookie) -> int | None:
        """A process still holding the group's cookie; the gone or changed ones are dropped."""
        for pid in sorted(entry.pids):
            try:
                if self.ops.get(pid) == entry.cookie:
                    return pid
            except OSError:
                pass
            entry.pids.discard(pid)
        return None

    def _disable(self, pids: list[int]) -> None:
        cookied = []
        for pid in pids:
            try:
                if self.ops.get(pid) != DEFAULT_COOKIE:
                    cookied.append(pid)
            except OSError:
                continue  # exited
        if cookied:
            self.ops.clear(cookied)
        for entry in self.groups.values():
            entry.pids.difference_update(pids)


def _update_rule_from_node_slo(rules: Rules, spec: NodeSLOSpec) -> bool:
    rule = CoreSchedRule.from_node_slo(spec)
    if rule == rules.core_sched:
        return False
    rules.core_sched = rule
    return True


def _no_resources(req: HookRequest, rules: Rules) -> Resources:
    # Cookies are per process, not a cgroup value: :class:`CoreSched` applies them.
    return Resources()


HOOK = RuntimeHook(name="CoreSched", fn=_no_resources, on_node_slo=_update_rule_from_node_slo)
