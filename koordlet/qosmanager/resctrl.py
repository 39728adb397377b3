"""ResctrlReconcile: upstream `pkg/koordlet/qosmanager/plugins/resctrl/resctrl_reconcile.go`,
with the resctrl file helpers it uses from `pkg/koordlet/util/system/resctrl.go` and the
schemata/tasks writes of `pkg/koordlet/resourceexecutor/resctrl.go`.

Owns koordlet's three resctrl groups `LSR` (LSE and LSR pods), `LS` and `BE` under
`<sys-fs-root>/resctrl/`. Every round, from NodeSLO `resourceQOSStrategy.<class>.resctrlQOS`:

* each group dir is created if missing (a CLOSID each: the kernel refuses a group past
  `info/L3/num_closids`);
* its `schemata` gets the class's L3 CAT mask — the ways `[ceil(w × start%), ceil(w × end%))` of
  the root's `info/L3/cbm_mask` (`w` ways) — and its MBA value (Intel: the percent rounded up to
  a multiple of 10; AMD: an absolute value, 2048 for unlimited), one entry per cache id of the
  root schemata, as `L3:0=3c;1=3c;` / `MB:0=90;1=90;`. Both lines are written together, only
  when a value differs from what the file shows (compared as numbers: the kernel prints masks
  zero-padded), and the MB line only where the kernel has MBA (`info/MB`). As upstream, the
  schemata are applied whatever the class's `enable`;
* the thread ids of the containers (and sandbox) of each active pod whose class has
  `resctrlQOS.enable` (and which has no `node.koordinator.sh/resctrl` annotation: those are
  the runtime hook's) are appended to the group's `tasks`, one id per write as the kernel
  takes them, only ids not already there.

Where resctrl is not mounted with L3 CAT (`info/L3/cbm_mask` missing) the strategy says so
once and does nothing; upstream would try to mount it, koordlet here expects the node to.
The CBM and the CPU vendor are read here (`info/L3/cbm_mask`, `/proc/cpuinfo`) where upstream
takes them from the node's CPU info, which its collector fills from the same files.
"""

from __future__ import annotations

import errno
import logging
import math
import os
from dataclasses import dataclass

from api.extension.qos import QoSClass, get_kube_qos_class, get_pod_qos_class_with_default
from api.extension.resctrl import ANNOTATION_RESCTRL
from api.slo.v1alpha1.resource_qos import ResourceQOS, ResourceQOSStrategy
from koordlet.qosmanager.framework import Context, KubeDict
from koordlet.qosmanager.helpers import pod_name, pod_uid
from koordlet.resourceexecutor.reader import CgroupReader
from koordlet.util.system.cgroup import CgroupDirNotExistError
from pkg.features.koordlet_features import RDT_RESCTRL

logger = logging.getLogger(__name__)

LSR_GROUP = "LSR"
LS_GROUP = "LS"
BE_GROUP = "BE"
RESCTRL_GROUPS = (LSR_GROUP, LS_GROUP, BE_GROUP)

L3_PREFIX = "L3"
MB_PREFIX = "MB"

AMD_VENDOR_ID = "AuthenticAMD"
# Upstream's measured peak of an AMD EPYC Milan CCD in Gb/s, discounted by 0.8.
AMD_CCD_MAX_MB_GBPS = 25 * 8 * 0.8
# AMD's "unlimited" memory bandwidth.
AMD_CCD_UNLIMITED_MB = "2048"

_GROUP_OF_QOS = {
    QoSClass.LSE: LSR_GROUP,
    QoSClass.LSR: LSR_GROUP,
    QoSClass.LS: LS_GROUP,
    QoSClass.BE: BE_GROUP,
}


def calculate_cat_l3_mask(cbm: int, start_percent: int, end_percent: int) -> str:
    """The group's L3 mask in lower-case hex (upstream `CalculateCatL3MaskValue`); ValueError
    for a root CBM that is not contiguous low bits or an empty or out-of-range percent range."""
    if cbm <= 0 or (cbm + 1) & cbm:
        raise ValueError(f"illegal cbm {cbm:#x}")
    if start_percent < 0 or end_percent > 100 or end_percent <= start_percent:
        raise ValueError(f"illegal l3 cat percent: start {start_percent}, end {end_percent}")
    ways = cbm.bit_length()
    start_way = math.ceil(ways * start_percent / 100)
    end_way = math.ceil(ways * end_percent / 100)
    return format((1 << end_way) - (1 << start_way), "x")


def calculate_mba(mba_percent: int | None, vendor_id: str) -> str | None:
    """The MB schemata value for `mbaPercent` (upstream `calculateMbaPercentForGroup`); None
    when it is unset or outside (0, 100]."""
    if mba_percent is None or not 0 < mba_percent <= 100:
        return None
    if vendor_id == AMD_VENDOR_ID:
        if mba_percent == 100:
            return AMD_CCD_UNLIMITED_MB
        return str(int(AMD_CCD_MAX_MB_GBPS * mba_percent / 100))
    # Intel MBA takes multiples of 10 (the kernel's bandwidth_gran): round up.
    return str(-(-mba_percent // 10) * 10)


def parse_schemata(content: str) -> dict[str, dict[int, str]]:
    """`L3:0=fff;1=fff\\nMB:0=100;1=100` → {"L3": {0: "fff", 1: "fff"}, "MB": {...}}; lines and
    entries that do not parse are skipped (other resources, e.g. ARM MPAM, may be listed)."""
    out: dict[str, dict[int, str]] = {}
    for line in content.splitlines():
        prefix, sep, entries = line.strip().partition(":")
        if not sep or ":" in entries:
            continue
        values: dict[int, str] = {}
        for entry in entries.split(";"):
            domain, eq, value = entry.partition("=")
            if eq and domain.strip().isdigit():
                values[int(domain)] = value.strip()
        out[prefix.strip()] = values
    return out


def format_schemata_line(prefix: str, cache_ids: list[int], value: str) -> str:
    """Upstream's `L3String`/`MBString`: every cache id with the same value, `;`-terminated."""
    return prefix + ":" + "".join(f"{i}={value};" for i in sorted(cache_ids)) + "\n"


def read_vendor_id(cpuinfo_path: str) -> str:
    """The first `vendor_id` of /proc/cpuinfo (upstream `GetVendorIDByCPUInfo`)."""
    try:
        with open(cpuinfo_path) as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "vendor_id":
                    return value.strip()
    except OSError as e:
        logger.warning("resctrl: cannot read the CPU vendor from %s: %s", cpuinfo_path, e)
    return "unknown"


@dataclass(slots=True, frozen=True)
class ResctrlFS:
    """The resctrl filesystem at `root` (`<sys-fs-root>/resctrl`)."""

    root: str

    @property
    def cbm_mask_path(self) -> str:
        return os.path.join(self.root, "info", L3_PREFIX, "cbm_mask")

    def group_dir(self, group: str) -> str:
        return os.path.join(self.root, group)

    def schemata_path(self, group: str) -> str:
        return os.path.join(self.root, group, "schemata")

    def tasks_path(self, group: str) -> str:
        return os.path.join(self.root, group, "tasks")

    def l3_cat_enabled(self) -> bool:
        return os.path.isfile(self.cbm_mask_path)

    def mba_enabled(self) -> bool:
        return os.path.isdir(os.path.join(self.root, "info", MB_PREFIX))

    def read_cbm(self) -> int:
        with open(self.cbm_mask_path) as f:
            return int(f.read().strip(), 16)

    def num_closids(self) -> str:
        try:
            with open(os.path.join(self.root, "info", L3_PREFIX, "num_closids")) as f:
                return f.read().strip()
        except OSError:
            return "unknown"

    def cache_ids(self) -> list[int]:
        """The L3 domains, from the root group's schemata (upstream `GetCacheIds`)."""
        with open(self.schemata_path("")) as f:
            return sorted(parse_schemata(f.read()).get(L3_PREFIX, {}))

    def ensure_group(self, group: str) -> bool:
        """Creates the group dir; True when it was created."""
        try:
            os.mkdir(self.group_dir(group), 0o755)
        except FileExistsError:
            return False
        return True

    def read_tasks(self, group: str) -> set[int]:
        with open(self.tasks_path(group)) as f:
            return {int(line) for line in f.read().split()}

    def update_schemata(self, group: str, cache_ids: list[int], lines: dict[str, str]) -> bool:
        """Writes `lines` (prefix → value for every cache id) in one write unless the file
        already shows those values; True when written."""
        path = self.schemata_path(group)
        with open(path) as f:
            current = parse_schemata(f.read())
        if all(_same_values(prefix, current.get(prefix, {}), cache_ids, value)
               for prefix, value in lines.items()):
            return False
        content = "".join(format_schemata_line(p, cache_ids, v) for p, v in lines.items())
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, content.encode())
        finally:
            os.close(fd)
        return True

    def append_tasks(self, group: str, task_ids: list[int]) -> int:
        """Appends each id with its own write (the kernel moves one task per write); a task
        that exited meanwhile (ESRCH) is skipped. Returns how many were written."""
        written = 0
        fd = os.open(self.tasks_path(group), os.O_WRONLY | os.O_APPEND)
        try:
            for task_id in sorted(task_ids):
                try:
                    os.write(fd, f"{task_id}\n".encode())
                    written += 1
                except OSError as e:
                    if e.errno != errno.ESRCH:
                        raise
        finally:
            os.close(fd)
        return written


def _same_values(prefix: str, current: dict[int, str], cache_ids: list[int], value: str) -> bool:
    base = 16 if prefix == L3_PREFIX else 10
    try:
        want = int(value, base)
        return set(current) == set(cache_ids) and all(
            int(current[i], base) == want for i in cache_ids)
    except ValueError:
        return False


def resource_qos_for_group(strategy: ResourceQOSStrategy, group: str) -> ResourceQOS | None:
    return {LSR_GROUP: strategy.lsr_class, LS_GROUP: strategy.ls_class,
            BE_GROUP: strategy.be_class}[group]


class ResctrlReconcile:
    name = "ResctrlReconcile"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.fs = ResctrlFS(os.path.join(ctx.system.sys_fs_root_dir, "resctrl"))
        self.reader = CgroupReader.for_env(ctx.env)
        self._cpuinfo = os.path.join(ctx.system.proc_root_dir, "cpuinfo")
        self._vendor_id: str | None = None
        self._unsupported_logged = False

    def enabled(self) -> bool:
        return (self.ctx.feature_gate.enabled(RDT_RESCTRL)
                and self.ctx.config.reconcile_interval_seconds > 0)

    def interval_seconds(self) -> float:
        return float(self.ctx.config.reconcile_interval_seconds)

    def run_once(self) -> None:
        slo = self.ctx.states.get_node_slo()
        if slo is None or slo.spec.resource_qos_strategy is None:
            return
        if not self.fs.l3_cat_enabled():
            if not self._unsupported_logged:
                logger.info("resctrlReconcile skipped: resctrl with L3 CAT is not mounted "
                            "(%s not found)", self.fs.cbm_mask_path)
                self._unsupported_logged = True
            return
        self._unsupported_logged = False
        strategy = slo.spec.resource_qos_strategy
        self.init_groups()
        self.reconcile_schemata(strategy)
        self.reconcile_tasks(strategy)

    def init_groups(self) -> None:
        """Creates the missing groups; one that cannot be created is logged and its writes
        fail (logged) below, as upstream."""
        for group in RESCTRL_GROUPS:
            try:
                if self.fs.ensure_group(group):
                    logger.info("resctrl: created group %s", group)
            except OSError as e:
                hint = (f" (info/L3/num_closids {self.fs.num_closids()})"
                        if e.errno == errno.ENOSPC else "")
                logger.warning("resctrl: create dir %s failed for group %s: %s%s",
                               self.fs.group_dir(group), group, e, hint)

    def vendor_id(self) -> str:
        if self._vendor_id is None:
            self._vendor_id = read_vendor_id(self._cpuinfo)
        return self._vendor_id

    def reconcile_schemata(self, strategy: ResourceQOSStrategy) -> None:
        try:
            cbm = self.fs.read_cbm()
            cache_ids = self.fs.cache_ids()
        except (OSError, ValueError) as e:
            logger.warning("resctrl: failed to read the L3 cbm or cache ids: %s", e)
            return
        if not cache_ids:
            logger.warning("resctrl: no L3 cache id in %s", self.fs.schemata_path(""))
            return
        mba = self.fs.mba_enabled()
        for group in RESCTRL_GROUPS:
            lines = self.schemata_lines(group, cbm, resource_qos_for_group(strategy, group), mba)
            if not lines:
                continue
            try:
                if self.fs.update_schemata(group, cache_ids, lines):
                    logger.info("resctrl: group %s schemata %s", group, lines)
            except OSError as e:
                logger.warning("resctrl: failed to write schemata %s of group %s: %s",
                               lines, group, e)

    def schemata_lines(self, group: str, cbm: int, qos: ResourceQOS | None,
                       mba: bool) -> dict[str, str]:
        cfg = qos.resctrl_qos if qos is not None else None
        if cfg is None:
            return {}
        lines = {}
        start, end = cfg.cat_range_start_percent, cfg.cat_range_end_percent
        if start is not None and end is not None:
            try:
                lines[L3_PREFIX] = calculate_cat_l3_mask(cbm, start, end)
            except ValueError as e:
                logger.warning("resctrl: failed to calculate l3 cat schemata for group %s: %s",
                               group, e)
        if mba:
            value = calculate_mba(cfg.mba_percent, self.vendor_id())
            if value is not None:
                lines[MB_PREFIX] = value
        return lines

    def reconcile_tasks(self, strategy: ResourceQOSStrategy) -> None:
        current: dict[str, set[int]] = {}
        for group in RESCTRL_GROUPS:
            try:
                current[group] = self.fs.read_tasks(group)
            except (OSError, ValueError) as e:
                logger.warning("resctrl: failed to read the tasks of group %s: %s", group, e)
        new: dict[str, set[int]] = {group: set() for group in current}
        for pod in self.ctx.states.get_all_pods():
            md = pod.get("metadata") or {}
            if ANNOTATION_RESCTRL in (md.get("annotations") or {}):
                continue  # the pod's own resctrl group, set up by the runtime hook
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            qos_class = get_pod_qos_class_with_default(pod)
            pod_group = _GROUP_OF_QOS.get(qos_class)
            if pod_group is None or pod_group not in new:
                continue
            qos = strategy.for_qos_class(qos_class.value)
            if qos is None or qos.resctrl_qos is None or not qos.resctrl_qos.enable:
                continue
            new[pod_group].update(t for t in self.pod_tasks(pod) if t not in current[pod_group])
        for group, task_ids in new.items():
            if not task_ids:
                continue
            try:
                written = self.fs.append_tasks(group, list(task_ids))
                logger.debug("resctrl: %d of %d new tasks into group %s", written,
                             len(task_ids), group)
            except OSError as e:
                logger.warning("resctrl: failed to write the tasks of group %s: %s", group, e)

    def pod_tasks(self, pod: KubeDict) -> list[int]:
        """Thread ids of the pod's started containers and of its sandbox (where VM-based
        runtimes run the workload); gone cgroups have none."""
        env = self.ctx.env
        names = {c.get("name") for c in (pod.get("spec") or {}).get("containers") or []}
        pod_dir = env.pod_dir(get_kube_qos_class(pod), pod_uid(pod))
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        started = [(s.get("name"), env.container_dir(pod_dir, s["containerID"]))
                   for s in statuses if s.get("containerID")]
        wanted = [cdir for name, cdir in started if name in names]
        sandbox = self._sandbox_dir(pod_dir, [cdir for _, cdir in started])
        out: list[int] = []
        for cdir in wanted + ([sandbox] if sandbox else []):
            try:
                out.extend(self.reader.read_cpu_tasks(cdir))
            except CgroupDirNotExistError:
                continue
            except (OSError, ValueError) as e:
                logger.warning("resctrl: failed to read the tasks of %s of pod %s: %s", cdir,
                               pod_name(pod), e)
        return out

    def _sandbox_dir(self, pod_dir: str, container_dirs: list[str]) -> str | None:
        """The pod's one cgroup dir that is no container's (upstream
        `GetPodSandboxContainerID`); None before the containers are created, or when the
        candidates are not exactly one (some container not ready)."""
        if not container_dirs:
            return None
        env = self.ctx.env
        known = {os.path.basename(d) for d in container_dirs}
        try:
            entries = os.scandir(env.dir_path(env.resource("tasks"), pod_dir))
        except OSError:
            return None
        with entries:
            candidates = [e.name for e in entries if e.is_dir() and e.name not in known]
        return f"{pod_dir}/{candidates[0]}" if len(candidates) == 1 else None
