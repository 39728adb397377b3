"""Every component starts as its upstream binary name and answers `--help`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import test
from descheduler import main as descheduler_main
from device_daemon import main as device_daemon_main
from koordlet import main as koordlet_main
from manager import main as manager_main
from runtime_proxy import main as runtime_proxy_main
from scheduler import main as scheduler_main

COMPONENTS = {
    "koord-manager": manager_main,
    "koord-scheduler": scheduler_main,
    "koord-descheduler": descheduler_main,
    "koordlet": koordlet_main,
    "koord-device-daemon": device_daemon_main,
    "koord-runtime-proxy": runtime_proxy_main,
}
# Components whose real command line exists; the others are still placeholders.
IMPLEMENTED = {"koord-manager", "koord-scheduler", "koord-descheduler", "koordlet"}
REPO_ROOT = Path(test.__file__).absolute().parents[1]


def test_our_test_package_shadows_the_stdlib() -> None:
    assert Path(test.__file__).absolute().parent == REPO_ROOT / "test"


@pytest.mark.parametrize("prog", sorted(COMPONENTS))
def test_help_names_the_binary_and_exits_zero(prog: str) -> None:
    module = COMPONENTS[prog].__name__
    result = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {prog}")
    placeholder = "Not implemented yet" in " ".join(result.stdout.split())
    assert placeholder == (prog not in IMPLEMENTED)


@pytest.mark.parametrize("prog", sorted(set(COMPONENTS) - IMPLEMENTED))
def test_running_says_not_implemented(prog: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert COMPONENTS[prog].main([]) == 1
    assert f"{prog}: not implemented yet" in capsys.readouterr().err


def test_scheduler_without_a_cluster_says_how_to_reach_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert scheduler_main.main(["--port", "0"]) == 1
    assert "no cluster configuration" in capsys.readouterr().err


def test_descheduler_without_a_cluster_says_how_to_reach_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert descheduler_main.main(["--port", "0"]) == 1
    assert "koord-descheduler: no cluster configuration" in capsys.readouterr().err


def test_manager_without_a_cluster_says_how_to_reach_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert manager_main.main(["--metrics-addr", "127.0.0.1:0",
                              "--health-probe-addr", "127.0.0.1:0"]) == 1
    err = capsys.readouterr().err
    assert "unable to set up koord-manager: no cluster configuration: pass --kubeconfig" in err


def test_koordlet_without_a_node_name_refuses_to_start(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert koordlet_main.main([]) == 1
    assert "failed to new daemon: NODE_NAME env is empty" in capsys.readouterr().err


def test_koordlet_without_a_cluster_says_how_to_reach_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "node-a")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert koordlet_main.main([]) == 1
    err = capsys.readouterr().err
    assert "failed to new daemon: no cluster configuration: pass --kubeconfig" in err
