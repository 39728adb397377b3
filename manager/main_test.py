"""koord-manager's command line: upstream's flag names and defaults, the --controllers
grammar, --sync-period and the webhook settings the flags and environment give."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from manager import controllers, main
from manager.webhook import WebhookServer
from pkg.client.rest import Client
from pkg.features import default_feature_gate
from pkg.features.features import COLOCATION_PROFILE_CONTROLLER
from test.apiserver import start


@pytest.fixture(autouse=True)
def gates() -> Iterator[None]:
    yield
    default_feature_gate.reset()


def test_defaults_are_upstreams() -> None:
    args = main.parse_args([])
    assert (args.metrics_addr, args.health_probe_addr) == (":8080", ":8000")
    assert args.enable_leader_election is True
    assert args.leader_election_namespace == "koordinator-system"
    assert args.leader_elect_resource_lock == "leases"
    assert (args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (15.0, 10.0, 2.0)
    assert (args.rest_config_qps, args.rest_config_burst) == (30, 50)
    assert (args.slo_config_name, args.config_namespace) == (
        "slo-controller-config", "koordinator-system")
    assert args.controllers == ["colocationprofile", "nodemetric", "noderesource", "nodeslo",
                                "quotaprofile"]
    assert args.noderesource_plugins == sorted([
        "BatchResource", "CPUNormalization", "GPUDeviceResource", "MidResource",
        "RDMADeviceResource", "ResourceAmplification"])
    assert (args.enable_pprof, args.pprof_addr, args.sync_period) == (True, ":8090", "")
    assert args.binding_admission_exclude_namespaces == "kube-system"
    assert args.colocation_profile_reconcile_interval == 30.0


def test_the_shipped_deployments_command_line_parses() -> None:
    """config/manager/manager.yaml's arguments."""
    args = main.parse_args([
        "--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000",
        "--logtostderr=true", "--leader-election-namespace=koordinator-system",
        "--config-namespace=koordinator-system", "--v=4", "--feature-gates=",
        "--sync-period=0"])
    assert args.enable_leader_election is True and args.v == 4
    assert main.sync_period(args.sync_period) == 0.0


@pytest.mark.parametrize(("flag", "enabled"), [
    ("nodemetric,noderesource,nodeslo,quotaprofile",
     ["nodemetric", "noderesource", "nodeslo", "quotaprofile"]),
    ("*", ["nodemetric", "noderesource", "nodeslo", "quotaprofile"]),
    ("*,-nodemetric", ["noderesource", "nodeslo", "quotaprofile"]),
    ("-nodemetric,*", ["noderesource", "nodeslo", "quotaprofile"]),
    ("nodemetric,-nodemetric", ["nodemetric"]),   # the first exact match wins
    ("quotaprofile", ["quotaprofile"]),
    ("", []),
    ("unknown", []),
])
def test_controllers_grammar(flag: str, enabled: list[str]) -> None:
    args = main.parse_args([f"--controllers={flag}"])
    assert controllers.enabled_controllers(args.controllers) == enabled


def test_colocationprofile_gate_is_reported_not_silently_ignored(
        caplog: pytest.LogCaptureFixture) -> None:
    args = main.parse_args([f"--feature-gates={COLOCATION_PROFILE_CONTROLLER}=true"])
    assert controllers.enabled_controllers(args.controllers) == [
        "nodemetric", "noderesource", "nodeslo", "quotaprofile"]
    assert "controller colocationprofile (gate ColocationProfileController) is not " \
           "implemented" in caplog.text


@pytest.mark.parametrize(("value", "seconds"), [
    ("", main.DEFAULT_SYNC_PERIOD), ("0", 0.0), ("90s", 90.0), ("1h", 3600.0),
    ("soon", main.DEFAULT_SYNC_PERIOD),  # upstream ignores what it cannot parse
])
def test_sync_period(value: str, seconds: float) -> None:
    assert main.sync_period(value) == seconds


def test_bad_flag_values_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--enable-leader-election=maybe"], ["--leader-elect-lease-duration=15"],
                 ["--feature-gates=NoSuchGate=true"]):
        with pytest.raises(SystemExit) as exc:
            main.parse_args(argv)
        assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid boolean value 'maybe'" in err
    assert "NoSuchGate" in err


def test_invalid_lease_timings_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main.main(["--leader-elect-lease-duration=1s",
                      "--leader-elect-renew-deadline=2s"]) == 1
    assert "leaderElection.leaseDuration: must be greater than renewDeadline" in \
        capsys.readouterr().err


def test_webhook_settings_from_environment_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBHOOK_PORT", "19876")
    monkeypatch.setenv("POD_NAMESPACE", "koord")
    args = main.parse_args([
        "--slo-config-name=my-slo", "--config-namespace=cfg",
        "--node-strategy-name-need-check=true", "--binding-admission-user-name=sched,ctrl",
        "--binding-admission-namespaces=*", "--binding-admission-dry-run"])
    options = main.webhook_options(args)
    assert (options.port, options.namespace) == (19876, "koord")
    assert (options.slo_config_name, options.config_namespace) == ("my-slo", "cfg")
    assert options.node_strategy_name_need_check is True
    assert options.binding_user_names == ("sched", "ctrl")
    assert options.binding_namespaces == ("*",)
    assert options.binding_dry_run is True
    assert options.binding_exclude_namespaces == ("kube-system",)
    assert options.binding_bypass_labels == ("koordinator.sh/binding-admission-bypass",)


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize(("flag", "reachable_on_other_loopback"),
                         [([], True), (["--webhook-bind-address=127.0.0.1"], False)])
def test_webhook_bind_address_limits_where_the_server_listens(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str],
        reachable_on_other_loopback: bool) -> None:
    """By default (as upstream) every interface; with the flag only the given address: the
    server on 127.0.0.1 is not reachable on 127.0.0.2 (another address of this host)."""
    monkeypatch.setenv("WEBHOOK_PORT", "0")
    monkeypatch.setenv("WEBHOOK_HOST", "127.0.0.1")
    monkeypatch.setenv("WEBHOOK_CERT_DIR", str(tmp_path / "certs"))
    args = main.parse_args(flag)
    assert main.webhook_options(args).bind_address == (flag[0].split("=")[1] if flag else "")
    srv = start()
    client = Client.from_kubeconfig(srv.kubeconfig)
    server = WebhookServer(client, main.webhook_options(args))
    server.start()
    try:
        assert _connects("127.0.0.1", server.port)
        assert _connects("127.0.0.2", server.port) is reachable_on_other_loopback
    finally:
        server.stop()
        client.close()
        srv.stop()


def test_a_non_integer_webhook_port_is_fatal(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("WEBHOOK_PORT", "https")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
        "'http://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "current-context: c\nusers: [{name: u, user: {}}]\n")
    assert main.main(["--kubeconfig", str(kubeconfig), "--metrics-addr=127.0.0.1:0",
                      "--health-probe-addr=127.0.0.1:0"]) == 1
    assert "WEBHOOK_PORT must be an integer, got 'https'" in capsys.readouterr().err
