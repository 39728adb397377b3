"""Go's canonical quantity output (``resource.Quantity.String()``) from
``api.core.format_quantity``."""

from decimal import Decimal

import pytest

from api.core import QuantityFormat, format_quantity, quantity_format


@pytest.mark.parametrize(("given", "expected"), [
    # What Go writes for common inputs.
    ("1", "1"), (1, "1"), ("2.5", "2500m"), ("0.1", "100m"), ("1000m", "1"), ("16Gi", "16Gi"),
    ("1024Mi", "1Gi"), ("10M", "10M"), ("0", "0"),
    # More of Go's behaviour.
    ("1536Mi", "1536Mi"), ("0.5Gi", "512Mi"), ("1.5Ki", "1536"), ("1000Ki", "1000Ki"),
    ("100Mi", "100Mi"), ("1023", "1023"), ("1k", "1k"), ("1500", "1500"), ("1500m", "1500m"),
    ("-500m", "-500m"), ("-1Gi", "-1Gi"), ("0.1n", "1n"), ("1e3", "1e3"), ("1.5e3", "1500"),
    ("12e-1", "1200e-3"), ("0m", "0"), ("0Gi", "0"), ("200Gi", "200Gi"), ("1E", "1E"),
])
def test_format_quantity_matches_go(given, expected):
    assert format_quantity(given) == expected


def test_numbers_use_the_requested_format():
    assert format_quantity(1500) == "1500"  # resource.NewQuantity(1500, DecimalSI)
    assert format_quantity(Decimal("2.2")) == "2200m"
    assert format_quantity(1073741824, QuantityFormat.BINARY_SI) == "1Gi"
    assert format_quantity(1000, QuantityFormat.BINARY_SI) == "1k"  # below 1024: DecimalSI
    assert format_quantity(2000, QuantityFormat.BINARY_SI) == "2000"


def test_quantity_format_follows_the_suffix():
    assert quantity_format("16Gi") is QuantityFormat.BINARY_SI
    assert quantity_format("1e3") is QuantityFormat.DECIMAL_EXPONENT
    assert quantity_format("1E") is QuantityFormat.DECIMAL_SI
    assert quantity_format("500m") is QuantityFormat.DECIMAL_SI


@pytest.mark.parametrize("bad", ["", "1K", "abc", "1.2.3", " 1", "Infinity", True])
def test_format_quantity_rejects_non_quantities(bad):
    with pytest.raises((ValueError, TypeError)):
        format_quantity(bad)
