"""Feature gates: parsing --feature-gates like component-base, errors naming the gate,
AllAlpha/AllBeta, locked gates, and Koordinator's registries and defaults."""

from __future__ import annotations

import argparse

import pytest

from pkg.features import default_feature_gate, koordlet_feature_gate
from pkg.features.featuregate import (
    ALPHA,
    BETA,
    DEPRECATED,
    GA,
    FeatureGate,
    FeatureGateError,
    FeatureSpec,
)


def gate() -> FeatureGate:
    return FeatureGate({"A": FeatureSpec(False, ALPHA), "B": FeatureSpec(True, BETA),
                        "G": FeatureSpec(True, GA, lock_to_default=True),
                        "D": FeatureSpec(False, DEPRECATED)})


def test_set_and_defaults() -> None:
    g = gate()
    assert not g.enabled("A") and g.enabled("B")
    g.set("A=true, B=false")
    assert g.enabled("A") and not g.enabled("B")
    g.set("")  # empty value changes nothing
    assert g.enabled("A")
    g.reset()
    assert not g.enabled("A")
    with pytest.raises(KeyError, match="not registered"):
        g.enabled("Nope")


@pytest.mark.parametrize(("value", "message"), [
    ("Nope=true", "unrecognized feature gate: Nope"),
    ("A", "missing bool value for A"),
    ("A=maybe", "invalid value of A=maybe"),
    ("G=false", "cannot set feature gate G to false, feature is locked to true"),
])
def test_errors_name_the_gate_and_apply_nothing(value: str, message: str) -> None:
    g = gate()
    with pytest.raises(FeatureGateError, match=message):
        g.set("B=false," + value)
    assert g.enabled("B"), "a failed flag must not apply its other entries"


def test_all_alpha_and_all_beta_leave_explicit_gates_alone() -> None:
    g = gate()
    g.add({"A2": FeatureSpec(False, ALPHA)})
    g.set("AllAlpha=true,A2=false")
    assert g.enabled("A") and not g.enabled("A2") and g.enabled("B")
    g.set("AllBeta=false")
    assert not g.enabled("B")


def test_deprecated_gate_warns(caplog: pytest.LogCaptureFixture) -> None:
    g = gate()
    g.set("D=true")
    assert g.enabled("D") and "Setting deprecated feature gate D=true" in caplog.text


def test_registration_conflicts() -> None:
    g = gate()
    g.add({"A": FeatureSpec(False, ALPHA)})
    with pytest.raises(ValueError, match="different spec"):
        g.add({"A": FeatureSpec(True, BETA)})


def test_flag_parses_and_reports_errors(capsys: pytest.CaptureFixture[str]) -> None:
    g = gate()
    p = argparse.ArgumentParser()
    g.add_flag(p)
    args = p.parse_args(["--feature-gates=A=true", "--feature-gates", "B=false"])
    assert args.feature_gates is g and g.enabled("A") and not g.enabled("B")
    with pytest.raises(SystemExit):
        p.parse_args(["--feature-gates=Typo=true"])
    assert "unrecognized feature gate: Typo" in capsys.readouterr().err
    assert "A=true|false (ALPHA - default=false)" in g.known_features()
    assert "B=true|false (BETA - default=true)" in g.known_features()
    assert not any(line.startswith(("G=", "D=")) for line in g.known_features())


def test_koordinator_registries() -> None:
    m = default_feature_gate.copy()
    assert m.enabled("WebhookFramework") and m.enabled("PodMutatingWebhook")
    assert not m.enabled("ColocationProfileController")
    assert m.spec("DisablePVCReservation") == FeatureSpec(False, BETA)
    assert m.enabled("DynamicSchedulerCheck") and not m.enabled("ResizePod")
    assert m.spec("PodDisruptionBudget").stage == GA
    m.set("EnableQuotaAdmission=true,MultiQuotaTree=true")
    assert m.enabled("EnableQuotaAdmission") and not default_feature_gate.enabled(
        "EnableQuotaAdmission"), "copy() must not leak into the process-wide gate"
    k = koordlet_feature_gate.copy()
    on = {n for n, v in k.as_dict().items() if v}
    assert on == {"BECPUSuppress", "CPUBurst", "RdtResctrl", "NodeTopologyReport",
                  "GroupIdentity", "CPUSetAllocator", "BatchResource"}
    assert k.spec("CPUBurst").stage == BETA and k.spec("Accelerators").stage == ALPHA
    with pytest.raises(FeatureGateError):
        k.set("WebhookFramework=true")  # a manager gate is unknown to koordlet
