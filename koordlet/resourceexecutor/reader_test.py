"""CgroupReader's kept-open files on a fake tree: fresh content every tick, fallback past the
limit, vanished files raise, and the sweep closes what was not read. (The real cgroup v1
behaviour on removal is in realcgroup_test.py.) Stat files parse in any line order."""

import os
from pathlib import Path

import pytest

from koordlet.metricsadvisor.testing import write_cgroup
from koordlet.resourceexecutor.reader import CGROUP_V1, CGROUP_V2, CgroupReader, OpenFiles
from koordlet.util.system.cgroup import CgroupDirNotExistError


def test_rewritten_file_reads_its_new_content(tmp_path: Path) -> None:
    reader = CgroupReader(str(tmp_path), CGROUP_V1)
    write_cgroup(str(tmp_path), CGROUP_V1, "kubepods/pod1", 1000, active_anon=4096)
    assert reader.read_cpu_usage("kubepods/pod1") == 1000
    assert reader.read_memory_stat("kubepods/pod1").usage() == 4096
    write_cgroup(str(tmp_path), CGROUP_V1, "kubepods/pod1", 250000000, active_anon=8192)
    assert reader.read_cpu_usage("kubepods/pod1") == 250000000
    assert reader.read_memory_stat("kubepods/pod1").usage() == 8192
    assert len(reader.files) == 2  # both files stayed open across the two ticks


def test_past_the_limit_reads_fall_back_to_open_read_close(tmp_path: Path) -> None:
    files = OpenFiles(limit=2)
    paths = []
    for i in range(5):
        p = tmp_path / f"f{i}"
        p.write_text(str(i))
        paths.append(str(p))
    assert [files.read(p) for p in paths] == [b"0", b"1", b"2", b"3", b"4"]
    assert len(files) == 2
    Path(paths[4]).write_text("44")
    assert files.read(paths[4]) == b"44"


def test_missing_file_raises_and_is_not_kept(tmp_path: Path) -> None:
    files = OpenFiles()
    with pytest.raises(FileNotFoundError):
        files.read(str(tmp_path / "nope"))
    assert len(files) == 0


def test_sweep_closes_files_not_read_since_the_previous_sweep(tmp_path: Path) -> None:
    files = OpenFiles()
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("a")
    b.write_text("b")
    files.read(str(a))
    files.read(str(b))
    files.sweep()  # both were read since the start: kept
    assert len(files) == 2
    files.read(str(a))
    fd_b = files._idle[str(b)]
    files.sweep()
    assert str(a) in files and str(b) not in files and len(files) == 1
    with pytest.raises(OSError):
        os.fstat(fd_b)  # closed, not leaked
    files.close()
    assert len(files) == 0


V2_STAT_KERNEL_ORDER = b"""anon 4096
file 8192
inactive_anon 1
active_anon 2
inactive_file 3
active_file 4
unevictable 5
slab_reclaimable 0
"""


@pytest.mark.parametrize("text", [
    V2_STAT_KERNEL_ORDER,
    # the wanted keys on the first line, shuffled and apart: the per-key search
    b"unevictable 5\nanon 4096\ninactive_file 3\nactive_anon 2\nfile 8192\n"
    b"active_file 4\ninactive_anon 1",
])
def test_memory_stat_parses_any_line_order(tmp_path: Path, text: bytes) -> None:
    (tmp_path / "pod1").mkdir()
    (tmp_path / "pod1" / "memory.stat").write_bytes(text)
    stat = CgroupReader(str(tmp_path), CGROUP_V2).read_memory_stat("pod1")
    assert (stat.inactive_anon, stat.active_anon, stat.inactive_file, stat.active_file,
            stat.unevictable) == (1, 2, 3, 4, 5)
    assert stat.usage() == 8 and stat.usage_with_page_cache() == 15


def test_memory_stat_without_a_wanted_key_names_it(tmp_path: Path) -> None:
    (tmp_path / "pod1").mkdir()
    (tmp_path / "pod1" / "memory.stat").write_bytes(
        V2_STAT_KERNEL_ORDER.replace(b"unevictable 5\n", b""))
    with pytest.raises(ValueError, match="missing unevictable"):
        CgroupReader(str(tmp_path), CGROUP_V2).read_memory_stat("pod1")


def test_tasks_of_many_threads_read_whole_and_paths_stay_bounded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `tasks` file longer than one read(2) chunk reads whole; a gone dir is
    `CgroupDirNotExistError`; the memo of paths starts afresh past its bound."""
    reader = CgroupReader(str(tmp_path), CGROUP_V1)
    tids = list(range(100000, 130000))  # ~210 KiB
    (tmp_path / "cpu" / "kubepods" / "pod1").mkdir(parents=True)
    (tmp_path / "cpu" / "kubepods" / "pod1" / "tasks").write_text(
        "".join(f"{t}\n" for t in tids))
    assert reader.read_cpu_tasks("kubepods/pod1") == tids
    with pytest.raises(CgroupDirNotExistError):
        reader.read_cpu_tasks("kubepods/gone")

    monkeypatch.setattr(CgroupReader, "MAX_MEMO_PATHS", 4)
    for i in range(20):
        with pytest.raises(CgroupDirNotExistError, match=f"pod-{i}/tasks"):
            reader.read_cpu_tasks(f"kubepods/pod-{i}")
    assert len(reader._paths) <= 4
