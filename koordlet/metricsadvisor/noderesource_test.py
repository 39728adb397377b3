import threading
import time

import psutil
import pytest

from koordlet.metriccache import metric_types as mt
from koordlet.metricsadvisor import procfs
from koordlet.metricsadvisor.noderesource import NodeResourceCollector


def _busy(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        x += 1


def test_node_cpu_and_memory_agree_with_psutil():
    stop = threading.Event()
    worker = threading.Thread(target=_busy, args=(stop,), daemon=True)
    worker.start()
    try:
        collector = NodeResourceCollector()
        psutil.cpu_percent(interval=None)
        t0 = time.time()
        collector.collect(t0)
        time.sleep(2.0)
        t1 = time.time()
        samples = {s.kind: s.value for s in collector.collect(t1)}
        ps_cores = psutil.cpu_percent(interval=None) / 100 * psutil.cpu_count()
        vm = psutil.virtual_memory()
    finally:
        stop.set()
        worker.join()
    assert ps_cores >= 0.5  # the busy thread makes the comparison meaningful
    assert samples[mt.NODE_CPU_USAGE] == pytest.approx(ps_cores, rel=0.10)
    assert samples[mt.NODE_MEMORY_USAGE] == pytest.approx(vm.total - vm.available, rel=0.10)


def test_formulas_on_fake_proc(tmp_path):
    (tmp_path / "stat").write_text(
        "cpu  100 10 50 9999 77 5 3 11 0 0\ncpu0 100 10 50 9999 77 5 3 11 0 0\n"
    )
    (tmp_path / "meminfo").write_text(
        "MemTotal:       1000 kB\nMemFree:         300 kB\nMemAvailable:    600 kB\n"
    )
    collector = NodeResourceCollector(str(tmp_path))
    first = {s.kind: s.value for s in collector.collect(10.0)}
    assert mt.NODE_CPU_USAGE not in first  # primes only
    assert first[mt.NODE_MEMORY_USAGE] == 400 * 1024
    assert mt.NODE_MEMORY_USAGE_WITH_PAGE_CACHE not in first  # the PageCacheCollector's
    # +2 CLK_TCK busy ticks over 1 s (idle/iowait/steal changes are ignored) -> 2 cores
    busy = 2 * procfs.CLK_TCK
    (tmp_path / "stat").write_text(f"cpu  {100 + busy} 10 50 20000 99 5 3 99 0 0\n")
    second = {s.kind: s.value for s in collector.collect(11.0)}
    assert second[mt.NODE_CPU_USAGE] == pytest.approx(2.0)
