"""OOMScoreAdj: per-container spec, else the pod default; bad values are skipped."""

from __future__ import annotations

import pytest

from koordlet.runtimehooks.hooks.oomscoreadj import oom_score_adj
from koordlet.runtimehooks.protocol import HookRequest, Resources
from koordlet.runtimehooks.rule import Rules

SPEC = "koordinator.sh/oom-score-adj-spec"
DEFAULT = "koordinator.sh/oom-score-adj"


def request(annotations: dict[str, str], container: str | None = "app") -> HookRequest:
    return HookRequest("p", "ns", "x", {}, annotations, "kubepods/podx", {},
                       container_name=container)


@pytest.mark.parametrize(("annotations", "expected"), [
    ({SPEC: '{"app": -998, "sidecar": 5}', DEFAULT: "100"}, -998),
    ({SPEC: '{"sidecar": 5}', DEFAULT: "100"}, 100),
    ({DEFAULT: "1000"}, 1000),
    ({}, None),
    ({DEFAULT: "1001"}, None),
    ({DEFAULT: "high"}, None),
    ({SPEC: '{"app": -2000}', DEFAULT: "1"}, None),
])
def test_target(annotations, expected) -> None:
    assert oom_score_adj(request(annotations), Rules()) == Resources(oom_score_adj=expected)


def test_sandboxes_are_skipped() -> None:
    assert oom_score_adj(request({DEFAULT: "5"}, container=None), Rules()) == Resources()
