"""Cluster configuration lookup: --kubeconfig, $KUBECONFIG, in-cluster, --master."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from pkg.client import config
from pkg.client.config import ConfigError, add_client_flags, load_config, options_from_args


def write_kubeconfig(path: Path, server: str, token: str = "t0k") -> str:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server,
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }))
    return str(path)


def test_explicit_path_then_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = write_kubeconfig(tmp_path / "a", "https://a.example:6443")
    b = write_kubeconfig(tmp_path / "b", "https://b.example:6443")
    monkeypatch.setenv("KUBECONFIG", b)
    assert load_config(a).host == "https://a.example:6443"
    cfg = load_config()
    assert cfg.host == "https://b.example:6443"
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer t0k"
    assert load_config(a, master="http://127.0.0.1:8080/").host == "http://127.0.0.1:8080"


def test_no_configuration_is_a_clear_error(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigError, match="--kubeconfig"):
        load_config()
    with pytest.raises(ConfigError, match="missing"):
        load_config(str(tmp_path / "missing"))
    assert load_config(master="http://m:1").host == "http://m:1"
    assert not config.in_cluster()


def test_flags_with_component_names_and_defaults() -> None:
    p = argparse.ArgumentParser()
    add_client_flags(p, qps=30, burst=50, qps_flag="--rest-config-qps",
                     burst_flag="--rest-config-burst")
    o = options_from_args(p.parse_args([]), user_agent="koordinator-manager")
    assert (o.qps, o.burst, o.kubeconfig, o.user_agent) == (30, 50, None, "koordinator-manager")
    o = options_from_args(p.parse_args(["--kubeconfig", "/k", "--rest-config-qps", "7"]))
    assert (o.kubeconfig, o.qps) == ("/k", 7)
