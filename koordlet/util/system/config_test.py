import argparse

from koordlet.util.system.config import Config


def test_flags_keep_upstream_names_and_ds_mode_defaults() -> None:
    parser = argparse.ArgumentParser()
    Config().add_flags(parser)
    assert Config.from_args(parser.parse_args([])) == Config()
    assert Config().cgroup_root_dir == "/host-cgroup/"
    cfg = Config.from_args(parser.parse_args(["--cgroup-root-dir", "/sys/fs/cgroup/"]))
    assert cfg.cgroup_root_dir == "/sys/fs/cgroup/"
    assert cfg.proc_root_dir == "/proc/"


def test_host_mode_uses_the_host_paths() -> None:
    cfg = Config.host_mode()
    assert (cfg.cgroup_root_dir, cfg.sys_root_dir, cfg.var_run_root_dir) == (
        "/sys/fs/cgroup/",
        "/sys/",
        "/var/run/",
    )
