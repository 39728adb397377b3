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


def test_in_cluster_service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod's service account (token and CA mounted, KUBERNETES_SERVICE_* set) against the
    embedded server: its address from the environment, TLS verified with the mounted CA.
    (The server runs without token checks: the official in-cluster loader sends the scheme
    as "bearer", which kube-apiserver accepts but the embedded server does not yet.)"""
    from kubernetes.config import incluster_config

    from pkg.client.resources import NAMESPACES
    from pkg.client.rest import Client
    from test.apiserver import new_token, start

    with start() as srv:
        (tmp_path / "token").write_text(new_token())
        monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
        monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", srv.ca_file)
        host, port = srv.url.removeprefix("https://").split(":")
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
        monkeypatch.delenv("KUBECONFIG", raising=False)
        assert config.in_cluster()
        client = Client.from_options(config.ClientOptions())
        assert client.configuration.host == srv.url
        assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert client._headers(None, "application/json")["authorization"].startswith("bearer ")
