"""The noderesource plugin registry and ``--noderesource-plugins``."""

from __future__ import annotations

import logging

import pytest

from manager.slo_controller.noderesource.batchresource import BatchResourcePlugin
from manager.slo_controller.noderesource.plugins import (
    NODE_RESOURCE_PLUGINS,
    PLUGINS,
    enabled_plugins,
)


def test_names_resolve_to_their_plugins_in_upstream_order() -> None:
    assert NODE_RESOURCE_PLUGINS["BatchResource"] is BatchResourcePlugin
    assert [p.name for p in PLUGINS] == [
        "CPUNormalization", "ResourceAmplification", "MidResource", "BatchResource",
        "GPUDeviceResource", "RDMADeviceResource"]
    assert [type(p) for p in enabled_plugins(["BatchResource"])] == [BatchResourcePlugin]
    assert BatchResourcePlugin not in map(type, enabled_plugins(["*", "-BatchResource"]))


def test_an_unknown_name_is_an_error_naming_it(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        assert enabled_plugins(["*", "-BatchResorce"]) == PLUGINS
    assert "unknown plugin -BatchResorce" in caplog.text
    assert "BatchResource" in caplog.text  # the names it could have meant
