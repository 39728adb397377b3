"""The runtime hook registry: each hook under its upstream name, in the order hooks run."""

from __future__ import annotations

from koordlet.runtimehooks.hooks import (
    batchresource,
    coresched,
    cpuset,
    groupidentity,
    oomscoreadj,
)
from koordlet.runtimehooks.registry import RUNTIME_HOOKS


def test_upstream_names_resolve_to_their_hooks_in_name_order() -> None:
    assert list(RUNTIME_HOOKS.items()) == [
        ("BatchResource", batchresource.HOOK),
        ("CPUSetAllocator", cpuset.HOOK),
        ("CoreSched", coresched.HOOK),
        ("GroupIdentity", groupidentity.HOOK),
        ("OOMScoreAdj", oomscoreadj.HOOK),
    ]
