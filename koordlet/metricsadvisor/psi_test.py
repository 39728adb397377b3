import os

import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metrics import metrics
from koordlet.metricsadvisor.framework import ContainerCgroup, PodCgroup
from koordlet.metricsadvisor.psi import PSICollector, parse_psi, read_proc_pressure
from koordlet.metricsadvisor.testing import fake_pods
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader

FULL = (
    "some avg10=1.50 avg60=2.25 avg300=3.00 total=12345\n"
    "full avg10=0.50 avg60=0.75 avg300=1.00 total=678\n"
)
SOME_ONLY = "some avg10=4.00 avg60=5.00 avg300=6.00 total=9\n"


def test_parse_psi():
    s = parse_psi(FULL)
    assert (s.some.avg10, s.some.avg60, s.some.avg300, s.some.total) == (1.5, 2.25, 3.0, 12345)
    assert s.full_supported and s.full.avg300 == 1.0
    s = parse_psi(SOME_ONLY)
    assert not s.full_supported and s.full.avg10 == 0.0 and s.some.avg300 == 6.0


@pytest.mark.skipif(not os.path.exists("/proc/pressure/cpu"), reason="kernel without PSI")
def test_proc_pressure_on_this_machine():
    s = read_proc_pressure("memory")
    assert s.full_supported and s.some.total >= 0


@pytest.mark.parametrize("version", [CGROUP_V1, CGROUP_V2])
def test_pod_psi_samples(tmp_path, version):
    pod = fake_pods(1, 0)[0]
    base = tmp_path / ("cpuacct" if version == CGROUP_V1 else "") / pod.cgroup_dir
    base.mkdir(parents=True)
    (base / "cpu.pressure").write_text(SOME_ONLY)
    (base / "memory.pressure").write_text(FULL)
    (base / "io.pressure").write_text(FULL)
    samples = PSICollector(CgroupReader(str(tmp_path), version), lambda: [pod]).collect(5.0)
    psi = {
        (
            s.properties[mt.PSI_RESOURCE],
            s.properties[mt.PSI_PRECISION],
            s.properties[mt.PSI_DEGREE],
        ): s.value
        for s in samples
        if s.kind == mt.POD_PSI
    }
    assert len(psi) == 18
    assert psi[("mem", "60", "some")] == 2.25 and psi[("io", "300", "full")] == 1.0
    assert psi[("cpu", "10", "full")] == 0.0
    supported = [s.value for s in samples if s.kind == mt.POD_PSI_CPU_FULL_SUPPORTED]
    assert supported == [0.0]


def _series(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """Every exported sample of ``name``, keyed by its sorted labels."""
    return {tuple(sorted(s.labels.items())): s.value
            for family in metrics.EXTERNAL.collect() for s in family.samples
            if s.name == name}


def test_pod_and_container_psi_exported_with_upstream_labels(tmp_path):
    """A v2 tree laid out under a temp dir as the kernel does: a pod whose cpu.pressure has no
    full line, and its container with every line. Upstream's labels and values; the full degree
    only where the kernel has it; a pod gone by the next round loses its series."""
    registered = metrics.node_name()
    metrics.register("node-psi")
    try:
        pod = fake_pods(1, 1)[0]
        c = pod.containers[0]
        pod = PodCgroup(pod.pod_uid, pod.cgroup_dir, (ContainerCgroup(
            c.container_id, c.cgroup_dir, "app"),), "web", "default")
        for d, cpu in ((pod.cgroup_dir, SOME_ONLY), (c.cgroup_dir, FULL)):
            base = tmp_path / d
            base.mkdir(parents=True, exist_ok=True)
            (base / "cpu.pressure").write_text(cpu)
            (base / "memory.pressure").write_text(FULL)
            (base / "io.pressure").write_text(FULL)
        pods = [pod]
        collector = PSICollector(CgroupReader(str(tmp_path), CGROUP_V2), lambda: pods)
        collector.collect(1.0)

        pod_psi = _series("koordlet_pod_psi")
        pod_labels = (("node", "node-psi"), ("pod_name", "web"), ("pod_namespace", "default"),
                      ("pod_uid", pod.pod_uid))
        assert len(pod_psi) == 3 + 6 + 6  # cpu: some only; mem and io: some and full
        key = tuple(sorted(pod_labels + (("cpu_full_supported", "false"),
                                         ("psi_degree", "some"), ("psi_precision", "avg60"),
                                         ("psi_resource_type", "cpu"))))
        assert pod_psi[key] == 5.0
        key = tuple(sorted(pod_labels + (("cpu_full_supported", "true"),
                                         ("psi_degree", "full"), ("psi_precision", "avg300"),
                                         ("psi_resource_type", "io"))))
        assert pod_psi[key] == 1.0

        container_psi = _series("koordlet_container_psi")
        assert len(container_psi) == 18
        key = tuple(sorted(pod_labels + (("container_id", c.container_id),
                                         ("container_name", "app"),
                                         ("cpu_full_supported", "true"),
                                         ("psi_degree", "full"), ("psi_precision", "avg10"),
                                         ("psi_resource_type", "cpu"))))
        assert container_psi[key] == 0.5

        pods.clear()
        collector.collect(2.0)
        assert _series("koordlet_pod_psi") == {} and _series("koordlet_container_psi") == {}
    finally:
        metrics.register(registered)
