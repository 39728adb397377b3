"""Min scaling (§8.4): upstream's ``scale_minquota_when_over_root_res_test.go`` cases."""

from __future__ import annotations

from scheduler.plugins.elasticquota.core.scale_min_quota import ScaleMinQuotaManager


def rl(cpu: int, memory: int) -> dict[str, int]:
    return {"cpu": cpu, "memory": memory}


def manager() -> ScaleMinQuotaManager:
    m = ScaleMinQuotaManager()
    m.update("100", "1", rl(50, 50), False)
    m.update("100", "2", rl(50, 50), True)
    m.update("100", "3", rl(50, 50), True)
    return m


def test_scaled_min() -> None:
    m = manager()
    total = rl(200, 200)
    assert m.scaled_min(total, "101", "1") is None  # unknown parent
    assert m.scaled_min(total, "101", "11") is None  # unknown child
    assert m.scaled_min(total, "100", "1") is None  # not scalable
    assert m.scaled_min(total, "100", "2") == rl(50, 50)  # enough for every min
    assert m.scaled_min(rl(0, 0), "100", "2") == rl(0, 0)
    # 100 − 50 of the fixed child, split 50:50 between the scalable ones.
    assert m.scaled_min(rl(100, 100), "100", "2") == rl(25, 25)
    assert m.scaled_min(rl(100, 100), "100", "3") == rl(25, 25)
    # The fixed child takes everything.
    assert m.scaled_min(rl(50, 50), "100", "2") == rl(0, 0)
    assert m.scaled_min(rl(50, 50), "100", "3") == rl(0, 0)
    # Only the oversubscribed dimension is scaled.
    assert m.scaled_min(rl(100, 1000), "100", "3") == rl(25, 50)


def test_reference_example_truncates() -> None:
    m = ScaleMinQuotaManager()
    for child in "abc":
        m.update("p", child, {"cpu": 100_000}, True)
    assert m.scaled_min({"cpu": 200_000}, "p", "a") == {"cpu": 66_666}


def test_update_and_delete_keep_the_sums() -> None:
    """Upstream TestScaleMinQuotaWhenOverRootResInfo_UpdateAndDelete."""
    m = ScaleMinQuotaManager()
    m.update("100", "1", rl(50, 50), False)
    assert (m.enable_scale_sum["100"], m.disable_scale_sum["100"]) == ({}, rl(50, 50))
    m.update("100", "1", rl(40, 40), True)
    assert (m.enable_scale_sum["100"], m.disable_scale_sum["100"]) == (rl(40, 40), rl(0, 0))
    m.update("100", "1", rl(50, 50), True)
    m.update("100", "2", rl(50, 50), True)
    m.update("100", "3", rl(50, 50), False)
    m.update("101", "4", rl(50, 50), False)
    assert (m.enable_scale_sum["100"], m.disable_scale_sum["100"]) == (rl(100, 100), rl(50, 50))
    assert (m.enable_scale_sum["101"], m.disable_scale_sum["101"]) == ({}, rl(50, 50))
    assert m.original_min == {"1": rl(50, 50), "2": rl(50, 50), "3": rl(50, 50),
                              "4": rl(50, 50)}
    m.delete("101", "4")
    assert m.disable_scale_sum["101"] == rl(0, 0)
    m.delete("100", "3")
    assert m.disable_scale_sum["100"] == rl(0, 0)
    m.delete("100", "2")
    assert m.enable_scale_sum["100"] == rl(50, 50)
    m.delete("100", "1")
    assert m.enable_scale_sum["100"] == rl(0, 0)
    assert m.original_min == {} and m.enable_scale == {}
