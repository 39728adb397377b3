"""The pod resctrl annotation (upstream `apis/extension/resctrl.go`), including case-insensitive
keys."""

from api.extension.resctrl import (
    ANNOTATION_RESCTRL,
    ResctrlConfig,
    format_resctrl,
    parse_resctrl,
)


def test_cacheid_matches_case_insensitively():
    # The spelling upstream's own tests use.
    raw = ('{"llc":{"schemataPerCache":[{"cacheid":0,"range":[20,80]},{"cacheid":1,'
           '"range":[20,50]}]},"mb":{"schemataPerCache":[{"cacheid":0,"percent":20}]}}')
    config = parse_resctrl({ANNOTATION_RESCTRL: raw})
    assert [c.cache_id for c in config.llc.schemata_per_cache] == [0, 1]
    assert config.llc.schemata_per_cache[1].range == [20, 50]
    assert config.mb.schemata_per_cache[0].percent == 20
    # Written back with Go's names; cacheID 0 is omitted (omitempty).
    assert format_resctrl(config) == (
        '{"llc":{"schemata":{},"schemataPerCache":[{"range":[20,80]},{"cacheID":1,'
        '"range":[20,50]}]},"mb":{"schemata":{},"schemataPerCache":[{"percent":20}]}}')


def test_structs_are_always_written():
    assert format_resctrl(ResctrlConfig()) == '{"llc":{"schemata":{}},"mb":{"schemata":{}}}'
    raw = '{"llc":{"schemata":{"range":[0,30]}},"mb":{"schemata":{"percent":50}}}'
    assert format_resctrl(parse_resctrl({ANNOTATION_RESCTRL: raw})) == raw


def test_missing_is_empty():
    assert parse_resctrl({}) == ResctrlConfig()
