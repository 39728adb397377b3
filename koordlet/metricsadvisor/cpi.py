"""Container CPI (upstream ``metricsadvisor/collectors/performance``'s CPI part and
``pkg/koordlet/util/perf``): CPU cycles and instructions of each container over a time window,
counted by the kernel's perf events in cgroup mode, exported as ``koordlet_container_cpi``.

Gate ``CPICollector`` (off by default). A round opens a cycles and an instructions counter on
every CPU for each container's ``perf_event`` cgroup (``perf_event_open`` with
``PERF_FLAG_PID_CGROUP``); the next round starts ``--cpi-collector-interval`` after this one
ends. The counters are read after ``--collect-cpi-timewindow``, scaled by
``time_enabled / time_running`` where the kernel multiplexed them, summed over the CPUs and
closed; the series are reset before each round's values are set, as upstream. No libpfm4
(gate ``Libpfm4`` is not implemented).

Where the kernel offers no hardware counters (a VM without a virtual PMU, a kernel without
perf events, ``perf_event_paranoid`` forbidding them) one counter opened on koordlet itself at
start says so: one log line, and the collector does nothing. Not stored in the metric cache (no
strategy reads CPI here).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import platform
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricCache
from koordlet.metrics import metrics
from koordlet.metrics.metrics import PodLabels
from koordlet.metricsadvisor.framework import PodSource

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 60.0
DEFAULT_TIME_WINDOW_SECONDS = 10.0

# <linux/perf_event.h>
_PERF_TYPE_HARDWARE = 0
_PERF_COUNT_HW_CPU_CYCLES = 0
_PERF_COUNT_HW_INSTRUCTIONS = 1
_PERF_FORMAT_TOTAL_TIME_ENABLED = 1 << 0
_PERF_FORMAT_TOTAL_TIME_RUNNING = 1 << 1
_ATTR_EXCLUDE_KERNEL = 1 << 5
_ATTR_EXCLUDE_HV = 1 << 6
_PERF_FLAG_PID_CGROUP = 1 << 2
_PERF_FLAG_FD_CLOEXEC = 1 << 3
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7; the fields after read_format stay zero
_SYSCALL = {"x86_64": 298, "aarch64": 241}


class PerfError(OSError):
    pass


def _perf_event_open(config: int, pid: int, cpu: int, flags: int, attr_flags: int) -> int:
    number = _SYSCALL.get(platform.machine())
    if number is None:
        raise PerfError(errno.ENOSYS, f"perf_event_open on {platform.machine()}")
    attr = ctypes.create_string_buffer(_ATTR_SIZE)
    read_format = _PERF_FORMAT_TOTAL_TIME_ENABLED | _PERF_FORMAT_TOTAL_TIME_RUNNING
    struct.pack_into("IIQQQQQ", attr, 0, _PERF_TYPE_HARDWARE, _ATTR_SIZE, config, 0, 0,
                     read_format, attr_flags)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = int(libc.syscall(number, attr, pid, cpu, -1, flags | _PERF_FLAG_FD_CLOEXEC))
    if fd < 0:
        err = ctypes.get_errno()
        raise PerfError(err, os.strerror(err))
    return fd


def _read_scaled(fd: int) -> float:
    value, enabled, running = struct.unpack("QQQ", os.read(fd, 24))
    return value * enabled / running if running and enabled else float(value)


def perf_unavailable() -> str | None:
    """Why hardware counters cannot be opened here, or None when they can."""
    try:
        os.close(_perf_event_open(_PERF_COUNT_HW_CPU_CYCLES, 0, -1, 0,
                                  _ATTR_EXCLUDE_KERNEL | _ATTR_EXCLUDE_HV))
    except PerfError as e:
        try:
            with open("/proc/sys/kernel/perf_event_paranoid") as f:
                paranoid = f.read().strip()
        except OSError:
            paranoid = "unknown"
        return f"{e.strerror} (perf_event_paranoid={paranoid})"
    return None


class Counters(Protocol):
    def read(self) -> tuple[float, float]:
        """(cycles, instructions) counted since opened."""
        ...

    def close(self) -> None: ...


class CountersOpener(Protocol):
    def __call__(self, cgroup_path: str, cpus: Sequence[int]) -> Counters:
        """Counters of every task of the cgroup at ``cgroup_path`` on ``cpus``."""
        ...


class PerfCounters:
    """Cycles and instructions of one cgroup, one fd each per CPU."""

    def __init__(self, cgroup_path: str, cpus: Sequence[int]) -> None:
        self._fds: list[tuple[int, int]] = []
        cgroup = os.open(cgroup_path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            for cpu in cpus:
                fds = [_perf_event_open(config, cgroup, cpu, _PERF_FLAG_PID_CGROUP,
                                        _ATTR_EXCLUDE_HV)
                       for config in (_PERF_COUNT_HW_CPU_CYCLES, _PERF_COUNT_HW_INSTRUCTIONS)]
                self._fds.append((fds[0], fds[1]))
        except PerfError:
            self.close()
            raise
        finally:
            os.close(cgroup)

    def read(self) -> tuple[float, float]:
        cycles = instructions = 0.0
        for cycles_fd, instructions_fd in self._fds:
            cycles += _read_scaled(cycles_fd)
            instructions += _read_scaled(instructions_fd)
        return cycles, instructions

    def close(self) -> None:
        for pair in self._fds:
            for fd in pair:
                os.close(fd)
        self._fds.clear()


@dataclass(slots=True)
class _Target:
    pod: PodLabels
    container_id: str
    container_name: str
    counters: Counters


class CPICollector:
    name = "CPICollector"

    def __init__(self, cache: MetricCache, pods: PodSource, perf_event_root: str,
                 interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
                 time_window_seconds: float = DEFAULT_TIME_WINDOW_SECONDS,
                 opener: CountersOpener = PerfCounters,
                 probe: Callable[[], str | None] = perf_unavailable) -> None:
        """``perf_event_root``: the dir the pods' cgroup dirs are relative to in the
        ``perf_event`` hierarchy (``<root>/perf_event`` on v1, the root on v2)."""
        self.cache = cache
        self.pods = pods
        self.perf_event_root = perf_event_root
        self.interval_seconds = interval_seconds
        self.time_window_seconds = time_window_seconds
        self.opener = opener
        self.probe = probe

    def collect_once(self, stop: threading.Event) -> None:
        """One window: open, wait ``time_window_seconds``, record, close (upstream
        ``collectContainerCPI``)."""
        cpu_info = self.cache.get(mt.NODE_CPU_INFO_KEY)
        if cpu_info is None:
            log.error("failed to get node cpu info : not exist")
            return
        cpus = sorted(p.cpu_id for p in cpu_info.processors)
        targets: list[_Target] = []
        try:
            for pod in self.pods():
                labels = PodLabels(pod.pod_uid, pod.name, pod.namespace)
                for c in pod.containers:
                    path = os.path.join(self.perf_event_root, c.cgroup_dir)
                    try:
                        counters = self.opener(path, cpus)
                    except OSError as e:
                        log.error("get and start container %s collector err: %s", c.name, e)
                        continue
                    targets.append(_Target(labels, c.container_id, c.name, counters))
            if stop.wait(self.time_window_seconds):
                return
            metrics.reset_container_cpi()
            for t in targets:
                try:
                    cycles, instructions = t.counters.read()
                except OSError as e:
                    log.error("collect container %s cpi err: %s", t.container_name, e)
                    continue
                metrics.record_container_cpi(t.pod, t.container_id, t.container_name, cycles,
                                             instructions)
        finally:
            for t in targets:
                t.counters.close()

    def run(self, stop: threading.Event) -> None:
        """A window, then ``interval_seconds`` (upstream's ``wait.Until``), until ``stop``;
        nothing where ``probe`` gives a reason."""
        reason = self.probe()
        if reason is not None:
            log.info("CPICollector: no hardware perf events on this node (%s), "
                     "koordlet_container_cpi is not collected", reason)
            return
        while not stop.is_set():
            self.collect_once(stop)
            if stop.wait(self.interval_seconds):
                return
