"""Whole numbers as Go's strconv reads them: ASCII digits, an optional sign, a range."""

import pytest

from si.gonumber import INT32_MAX, INT64_MAX, parse_count, parse_decimal, parse_int, parse_uint


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("42", 42), ("+7", 7), ("-7", -7), ("007", 7),
                                             (str(INT64_MAX), INT64_MAX), (str(-INT64_MAX - 1), -INT64_MAX - 1)])
def test_what_parse_int_accepts(text, value):
    assert parse_int(text) == value


@pytest.mark.parametrize("text", ["", "+", "-", " 1", "1 ", "1\n", "1_000", "0x10", "1.0", "1e3", "²", "١٢",
                                  "\uff11", str(INT64_MAX + 1), "9" * 5000])
def test_what_parse_int_refuses_is_a_short_value_error(text):
    with pytest.raises(ValueError) as error:
        parse_int(text)
    assert len(str(error.value)) < 300


def test_ranges_follow_the_bit_size():
    assert parse_int(str(INT32_MAX), 32) == INT32_MAX
    with pytest.raises(ValueError, match="out of range"):
        parse_int(str(INT32_MAX + 1), 32)
    assert parse_uint(str(2**64 - 1)) == 2**64 - 1
    for text in ("+1", "-1", str(2**64)):
        with pytest.raises(ValueError):
            parse_uint(text)


def test_a_count_is_an_integer_of_at_least_zero():
    assert parse_count("+3") == 3
    with pytest.raises(ValueError, match="negative"):
        parse_count("-1")


@pytest.mark.parametrize(("text", "value"), [("1000", 1000.0), ("0.5", 0.5), (".5", 0.5), ("1e3", 1000.0),
                                             ("-2", -2.0)])
def test_decimals(text, value):
    assert parse_decimal(text) == value


@pytest.mark.parametrize("text", ["inf", "nan", "Infinity", "1_000", "١", "1e999", "1e", "", " 1"])
def test_decimals_refused(text):
    with pytest.raises(ValueError):
        parse_decimal(text)
