"""metav1.Time parsing: ``parse_time`` raises on anything but RFC 3339, ``parse_timestamp``
reads such a field as unset."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from api.meta import format_time, format_timestamp, parse_time, parse_timestamp

EPOCH_2024 = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("text", "expected"), [
    ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    ("2024-01-02t03:04:05z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
    # MicroTime, and Go's RFC3339Nano cut to the microsecond
    ("2024-01-02T03:04:05.123456Z", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
    ("2024-01-02T03:04:05.123456789Z", datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)),
    ("2024-01-02T03:04:05.5Z", datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=UTC)),
    ("2024-01-02T05:04:05+02:00",
     datetime(2024, 1, 2, 5, 4, 5, tzinfo=timezone(timedelta(hours=2)))),
    ("2024-01-01T22:04:05-05:00",
     datetime(2024, 1, 1, 22, 4, 5, tzinfo=timezone(timedelta(hours=-5)))),
])
def test_rfc3339_with_and_without_fractions_and_zones(text: str, expected: datetime) -> None:
    parsed = parse_time(text)
    assert parsed == expected and parsed.tzinfo is not None
    assert parse_timestamp(text) == expected.timestamp()


def test_offsets_name_the_same_instant() -> None:
    assert parse_timestamp("2024-01-02T05:04:05+02:00") == EPOCH_2024
    assert parse_timestamp("2024-01-01T22:04:05-05:00") == EPOCH_2024
    assert format_time(parse_time("2024-01-02T05:04:05+02:00")) == "2024-01-02T03:04:05Z"
    # A clock's seconds are written as metav1.Time, in UTC and to the second.
    assert format_timestamp(EPOCH_2024 + 0.9) == "2024-01-02T03:04:05Z"


@pytest.mark.parametrize("text", [
    "", "garbage", "2024-01-02", "2024-01-02T03:04:05", "2024-01-02T03:04Z",
    "2024-01-02T03:04:05+0200", "1704164645",
])
def test_anything_else_raises_or_reads_as_unset(text: str) -> None:
    with pytest.raises(ValueError, match="not an RFC 3339 timestamp"):
        parse_time(text)
    assert parse_timestamp(text) is None


@pytest.mark.parametrize("value", [None, 1704164645, {"time": "2024-01-02T03:04:05Z"}])
def test_a_missing_or_non_string_field_reads_as_unset(value: object) -> None:
    assert parse_timestamp(value) is None
