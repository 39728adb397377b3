"""The registry: each plugin under its upstream name, serving exactly the extension points its
upstream counterpart serves, as its own class declares them."""

from __future__ import annotations

import pytest

from scheduler.apis.config.testing import PLUGIN_POINTS
from scheduler.framework.interface import EXTENSION_POINTS, implements
from scheduler.framework.plugins.nodename import NodeName
from scheduler.framework.registry import DuplicatePluginError, register
from scheduler.plugins.registry import NOT_YET_IMPLEMENTED, new_registry


@pytest.mark.parametrize("name", sorted(new_registry()))
def test_a_plugin_declares_upstreams_extension_points(name: str) -> None:
    cls = new_registry()[name]
    assert cls.name == name
    assert {point for point in EXTENSION_POINTS if implements(cls, point)} == PLUGIN_POINTS[name]


def test_not_yet_implemented_names_no_registered_plugin() -> None:
    assert not NOT_YET_IMPLEMENTED.keys() & new_registry().keys()


def test_a_name_registers_once() -> None:
    registry = new_registry()
    with pytest.raises(DuplicatePluginError, match="plugin 'NodeName' is already registered "
                                                   r"\(by scheduler\.framework\.plugins"):
        register(registry, [NodeName])
