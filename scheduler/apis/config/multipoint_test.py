"""expand_profile_plugins: kube-scheduler's multiPoint expansion and score weights."""

from __future__ import annotations

import pytest

from scheduler.apis.config.extension_points import ExtensionPoint, PluginRef
from scheduler.apis.config.multipoint import expand_profile_plugins
from scheduler.apis.config.types import KubeSchedulerProfile, Plugin, Plugins, PluginSet

POINTS = {"F1": {"filter", "score"}, "F2": {"filter"}, "F3": {"filter", "score"},
          "S": {"score"}, "B": {"bind"}}


def implements(name: str, point: str) -> bool:
    return point in POINTS.get(name, set())


def profile(**sets: PluginSet) -> KubeSchedulerProfile:
    return KubeSchedulerProfile(scheduler_name="p", plugins=Plugins(**sets))


def ps(*enabled: str | tuple[str, int], disabled: tuple[str, ...] = ()) -> PluginSet:
    return PluginSet(
        enabled=[Plugin(name=p) if isinstance(p, str) else Plugin(name=p[0], weight=p[1])
                 for p in enabled],
        disabled=[Plugin(name=n) for n in disabled])


def test_multi_point_plugins_go_where_they_implement() -> None:
    out = expand_profile_plugins(profile(multi_point=ps("F1", ("S", 4), "B")), implements)
    assert set(out) == {p.value for p in ExtensionPoint}
    assert out["filter"] == [PluginRef("F1", 0)]
    assert out["score"] == [PluginRef("F1", 1), PluginRef("S", 4)]
    assert out["bind"] == [PluginRef("B", 0)]
    assert out["preFilter"] == []


def test_order_overrides_then_multi_point_then_the_rest() -> None:
    out = expand_profile_plugins(profile(multi_point=ps("F1", "F2", "F3"),
                                         filter=ps("X", "F3", "Y")), implements)
    # F3 is also configured at filter: it comes first, then F1 and F2, then X and Y.
    assert [r.name for r in out["filter"]] == ["F3", "F1", "F2", "X", "Y"]


def test_disabled_at_a_point_skips_the_multi_point_plugin() -> None:
    out = expand_profile_plugins(profile(multi_point=ps("F1", "F2"),
                                         filter=ps(disabled=("F1",))), implements)
    assert [r.name for r in out["filter"]] == ["F2"]
    assert [r.name for r in out["score"]] == ["F1"]


def test_star_skips_expansion_at_that_point() -> None:
    out = expand_profile_plugins(profile(multi_point=ps("F1", "F2"),
                                         filter=ps("X", disabled=("*",))), implements)
    assert [r.name for r in out["filter"]] == ["X"]


def test_score_weight_explicit_over_multi_point_over_one() -> None:
    out = expand_profile_plugins(profile(multi_point=ps(("F1", 5), ("F3", 6), ("S", 0)),
                                         score=ps(("F1", 9), "F3")), implements)
    weights = dict(out["score"])
    # F1: explicit 9; F3: explicit entry without weight means 1; S: multiPoint 0 means 1.
    assert weights == {"F1": 9, "F3": 1, "S": 1}


def test_plugin_twice_at_a_point_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"profile 'p': plugins\.filter\.enabled\[1\]: plugin "
                                         r"'X' is already registered at filter"):
        expand_profile_plugins(profile(filter=ps("X", "X")), implements)
    with pytest.raises(ValueError, match=r"plugins\.multiPoint\.enabled\[1\]"):
        expand_profile_plugins(profile(multi_point=ps("F2", "F2")), implements)
