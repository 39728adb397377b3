"""PSI collection (upstream ``pkg/koordlet/util/system/psi.go`` and
``metricsadvisor/collectors/performance``, PSI part): pod and container pressure from the cgroup
``cpu``/``memory``/``io.pressure`` files, plus parsing of ``/proc/pressure`` files.

A file without a ``full`` line means "full unsupported" (the CPU file on older kernels): its full
values are zeros and ``*_psi_cpu_full_supported`` is 0.

Each round also replaces the ``koordlet_pod_psi``/``koordlet_container_psi`` series (upstream
``metrics.RecordPodPSI``/``RecordContainerPSI``): precisions ``avg10``/``avg60``/``avg300``, the
``full`` degree only where the file has it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from koordlet.metriccache import metric_types as mt
from koordlet.metriccache.metric_cache import MetricSample
from koordlet.metrics import metrics
from koordlet.metrics.metrics import PodLabels, PSIRecord
from koordlet.metricsadvisor.framework import ContainerCgroup, PodSource
from koordlet.resourceexecutor.reader import CgroupReader

# file name → upstream psi_resource property value
RESOURCES = {"cpu": "cpu", "memory": "mem", "io": "io"}
PRECISIONS = ("10", "60", "300")


@dataclass(slots=True)
class PSILine:
    avg10: float = 0.0
    avg60: float = 0.0
    avg300: float = 0.0
    total: int = 0


@dataclass(slots=True)
class PSIStats:
    some: PSILine = field(default_factory=PSILine)
    full: PSILine = field(default_factory=PSILine)
    full_supported: bool = False


def parse_psi(text: str) -> PSIStats:
    """Parses ``some avg10=.. avg60=.. avg300=.. total=..`` and the optional ``full`` line."""
    stats = PSIStats()
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("some", "full"):
            continue
        kv = dict(p.split("=", 1) for p in parts[1:])
        parsed = PSILine(
            float(kv["avg10"]), float(kv["avg60"]), float(kv["avg300"]), int(kv["total"])
        )
        if parts[0] == "some":
            stats.some = parsed
        else:
            stats.full, stats.full_supported = parsed, True
    return stats


def read_proc_pressure(resource: str, proc_root: str = "/proc") -> PSIStats:
    with open(os.path.join(proc_root, "pressure", resource)) as f:
        return parse_psi(f.read())


def _samples(kind: str, base: dict[str, str], resource: str, s: PSIStats, now: float):
    for degree, line in (("some", s.some), ("full", s.full)):
        for precision, value in zip(PRECISIONS, (line.avg10, line.avg60, line.avg300)):
            props = {
                **base,
                mt.PSI_RESOURCE: RESOURCES[resource],
                mt.PSI_PRECISION: precision,
                mt.PSI_DEGREE: degree,
            }
            yield MetricSample(kind, props, now, value)


def psi_records(stats: dict[str, PSIStats]) -> list[PSIRecord]:
    """The exported values of one cgroup's files (upstream ``getPSIRecords``)."""
    out = []
    for resource, s in stats.items():
        lines = [("some", s.some)] + ([("full", s.full)] if s.full_supported else [])
        for degree, line in lines:
            for precision, value in zip(PRECISIONS, (line.avg10, line.avg60, line.avg300)):
                out.append(PSIRecord(RESOURCES[resource], f"avg{precision}", degree, value,
                                     s.full_supported))
    return out


class PSICollector:
    name = "PSICollector"

    def __init__(self, reader: CgroupReader, pods: PodSource) -> None:
        self.reader = reader
        self.pods = pods

    def _read_all(self, cgroup_dir: str) -> dict[str, PSIStats] | None:
        try:
            return {r: parse_psi(self.reader.read_pressure(cgroup_dir, r)) for r in RESOURCES}
        except (OSError, ValueError, KeyError):
            return None  # no PSI for this cgroup (kernel without psi, or cgroup gone)

    def collect(self, now: float) -> list[MetricSample]:
        out: list[MetricSample] = []
        metrics.reset_psi()
        for pod in self.pods():
            labels = PodLabels(pod.pod_uid, pod.name, pod.namespace)
            targets: list[tuple[str, str, dict[str, str], str, ContainerCgroup | None]] = [
                (
                    mt.POD_PSI,
                    mt.POD_PSI_CPU_FULL_SUPPORTED,
                    {mt.POD_UID: pod.pod_uid},
                    pod.cgroup_dir,
                    None,
                )
            ]
            targets += [
                (
                    mt.CONTAINER_PSI,
                    mt.CONTAINER_PSI_CPU_FULL_SUPPORTED,
                    {mt.POD_UID: pod.pod_uid, mt.CONTAINER_ID: c.container_id},
                    c.cgroup_dir,
                    c,
                )
                for c in pod.containers
            ]
            for kind, supported_kind, base, cgroup_dir, container in targets:
                stats = self._read_all(cgroup_dir)
                if stats is None:
                    continue
                for resource, s in stats.items():
                    out.extend(_samples(kind, base, resource, s, now))
                supported = 1.0 if stats["cpu"].full_supported else 0.0
                out.append(MetricSample(supported_kind, base, now, supported))
                if container is None:
                    metrics.record_pod_psi(labels, psi_records(stats))
                else:
                    metrics.record_container_psi(labels, container.container_id, container.name,
                                                 psi_records(stats))
        return out
