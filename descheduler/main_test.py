"""koord-descheduler's `--config`: a bad file stops start-up naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from descheduler.main import main

HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerConfiguration\n"


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "koord-descheduler.config"
    path.write_text(text)
    code = main([f"--config={path}"])
    return code, capsys.readouterr().err.replace(str(path), "FILE")


def test_bad_config_stops_start_up_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, HEAD + "deschedulingIntervl: 10s\n", capsys)
    assert code == 1
    assert err.strip() == "koord-descheduler: FILE: deschedulingIntervl: unknown field"


def test_bad_args_stop_start_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, HEAD + "profiles:\n- pluginConfig:\n  - name: MigrationController\n"
                    "    args: {evictionPolicy: Kill}\n", capsys)
    assert code == 1
    assert "FILE: profiles[0].pluginConfig[0].args.evictionPolicy: unsupported value 'Kill'" \
        in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([f"--config={tmp_path / 'nope'}"]) == 1
    assert "nope: cannot read the file: No such file or directory" in capsys.readouterr().err


def test_good_config_gets_past_the_check(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(tmp_path, HEAD + "deschedulingInterval: 10s\n", capsys)
    assert (code, err.strip()) == (1, "koord-descheduler: not implemented yet")
