"""The pod-level LLC and memory-bandwidth schemata annotation ``node.koordinator.sh/resctrl``.

Corresponds to upstream `apis/extension/resctrl.go`. ``llc`` and ``mb`` (and
their ``schemata``) are structs, so Go always writes them; ``cacheID``, ``percent`` and
``range`` are left out when zero or empty. Keys match case-insensitively (``"cacheid"``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from api.extension.codec import decode_model
from api.extension.constants import NODE_DOMAIN_PREFIX
from api.extension.payload import GoInt64, GoPayload

ANNOTATION_RESCTRL = NODE_DOMAIN_PREFIX + "/resctrl"


class SchemataConfig(GoPayload):
    """A share of the resource: a percent, or a ``[start, end]`` range."""

    percent: GoInt64 = 0
    range: list[GoInt64] | None = None


class SchemataPerCacheConfig(GoPayload):
    """The schemata of one cache id."""

    cache_id: GoInt64 = Field(0, alias="cacheID")
    percent: GoInt64 = 0
    range: list[GoInt64] | None = None


class ResctrlSchemata(GoPayload):
    """LLC or MB: schemata for all caches, and per cache."""

    schemata: SchemataConfig = Field(default_factory=SchemataConfig)
    schemata_per_cache: list[SchemataPerCacheConfig] | None = None


class ResctrlConfig(GoPayload):
    llc: ResctrlSchemata = Field(default_factory=ResctrlSchemata)
    mb: ResctrlSchemata = Field(default_factory=ResctrlSchemata)


def parse_resctrl(annotations: Mapping[str, str] | None) -> ResctrlConfig:
    """The pod's resctrl config; missing → empty config."""
    raw = (annotations or {}).get(ANNOTATION_RESCTRL)
    if raw is None:
        return ResctrlConfig()
    return decode_model(ANNOTATION_RESCTRL, raw, ResctrlConfig)


def format_resctrl(config: ResctrlConfig) -> str:
    return config.to_go_json()


__all__ = [
    "ANNOTATION_RESCTRL", "ResctrlConfig", "ResctrlSchemata", "SchemataConfig",
    "SchemataPerCacheConfig", "format_resctrl", "parse_resctrl",
]
