"""The framework's extension points, by their configuration names, and a configured plugin.

Corresponds to the fields of kube-scheduler's ``Plugins`` type (``k8s.io/kube-scheduler/config``)
and to the plugin lists ``frameworkImpl`` builds from them. The identifiers are the camelCase
JSON names (``"preFilter"``); ``ExtensionPoint`` is a ``str`` enum, so either form works as a key.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class ExtensionPoint(StrEnum):
    """Extension points in the order a pod meets them."""

    PRE_ENQUEUE = "preEnqueue"
    QUEUE_SORT = "queueSort"
    PRE_FILTER = "preFilter"
    FILTER = "filter"
    POST_FILTER = "postFilter"
    PRE_SCORE = "preScore"
    SCORE = "score"
    RESERVE = "reserve"
    PERMIT = "permit"
    PRE_BIND = "preBind"
    BIND = "bind"
    POST_BIND = "postBind"


# Not an extension point: the Plugins key whose plugins go to every point they implement.
MULTI_POINT = "multiPoint"


class PluginRef(NamedTuple):
    """A plugin as configured at one extension point. ``weight`` is its score weight at
    ``score`` (never 0 there) and 0 at every other point."""

    name: str
    weight: int
