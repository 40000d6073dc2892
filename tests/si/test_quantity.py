"""Kubernetes quantities into SI integers."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from si.quantity import QuantityError, format_quantity, from_kubernetes, parse_quantity, to_si_value


@pytest.mark.parametrize(("text", "value"), [
    ("100m", Fraction(1, 10)), ("1.5", Fraction(3, 2)), ("2Gi", 2 * 2**30), ("1e3", 1000), ("1E-3", Fraction(1, 1000)),
    ("5k", 5000), ("3M", 3 * 10**6), ("1G", 10**9), ("1T", 10**12), ("1P", 10**15), ("2E", 2 * 10**18),
    ("1Ki", 1024), ("1Mi", 2**20), ("1Ti", 2**40), ("1Pi", 2**50), ("1Ei", 2**60), (".5", Fraction(1, 2)),
    ("0", 0), ("+7", 7), ("-2", -2), ("250u", Fraction(1, 4000)), (3, 3), (0.25, Fraction(1, 4)),
])
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "1Gb", "1ki", "Gi", "1 Gi", "--1", "1e", "1e3Gi", "0x10",
                                  None, True, float("nan"), float("inf"), [1]])
def test_malformed_quantities_are_refused_with_the_value_named(text):
    with pytest.raises(QuantityError) as error:
        parse_quantity(text)
    assert repr(text) in str(error.value)


def test_si_units():
    assert from_kubernetes({"cpu": "100m", "memory": "2Gi", "pods": "1", "nvidia.com/gpu": 2}) == {
        "vcore": 100, "memory": 2 * 2**30, "pods": 1, "nvidia.com/gpu": 2}
    assert to_si_value("vcore", "1.5") == 1500
    assert to_si_value("vcore", "0.5m") == 1, "a fraction of the smallest unit rounds up, as Kubernetes does"
    assert to_si_value("memory", "1.5") == 2


def test_negative_and_oversized_quantities_are_refused():
    with pytest.raises(QuantityError, match="negative"):
        to_si_value("memory", "-1Gi")
    with pytest.raises(QuantityError, match="int64"):
        to_si_value("memory", "16Ei")


@given(st.integers(min_value=0, max_value=2**62))
def test_memory_round_trips_through_its_kubernetes_spelling(value):
    assert to_si_value("memory", format_quantity("memory", value)) == value


@given(st.integers(min_value=0, max_value=10**12))
def test_vcore_round_trips_through_its_kubernetes_spelling(millicores):
    assert to_si_value("vcore", format_quantity("vcore", millicores)) == millicores


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi"]))
def test_suffixes_scale_exactly(number, suffix):
    scale = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}[suffix]
    assert to_si_value("memory", f"{number}{suffix}") == number * scale


@pytest.mark.parametrize("text", ["1e" + "0" * 5000, "1" * 5000, "1" * 5000 + "e3", "9" * 30 + "Ei", "1e31",
                                  "1." + "1" * 5000])
def test_huge_spellings_are_refused_as_quantity_errors_with_the_value_elided(text):
    with pytest.raises(QuantityError) as error:
        to_si_value("vcore", text)
    message = str(error.value)
    assert text[:20] in message and len(message) < 400


def test_an_integer_beyond_int64_is_named_without_printing_all_its_digits():
    with pytest.raises(QuantityError, match="int64") as error:
        to_si_value("memory", 10**5000)
    assert len(str(error.value)) < 400
