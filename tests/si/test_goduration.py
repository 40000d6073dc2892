"""Go durations, read once for the core's properties and settings, the shim's settings and the flags."""

import argparse

import pytest

from actors.cli import duration
from actors.core.config import duration_seconds
from actors.core.scheduler import health_interval
from actors.shim import settings as shim_settings
from si.goduration import parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("0", 0.0), ("30s", 30.0), ("1m30s", 90.0), ("1.5h", 5400.0), ("500ms", 0.5), ("2us", 2e-6), ("2µs", 2e-6),
    ("2μs", 2e-6), ("10ns", 1e-8), (".5s", 0.5), ("-1m", -60.0), ("+3s", 3.0), ("1h2m3s4ms", 3723.004),
])
def test_what_go_accepts(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "s", "1d", "1m30", "1 m", "--1s", "1s-", "0x", "5S", "1e3s"])
def test_what_go_refuses_is_a_short_clear_error(text):
    with pytest.raises(ValueError, match="not a duration such as 30s"):
        parse_duration(text)


def test_each_reader_keeps_its_own_range_over_the_one_syntax():
    assert duration_seconds("1m30s") == 90.0 and duration_seconds("2µs") == 2e-6
    with pytest.raises(ValueError, match="must not be negative"):
        duration_seconds("-5s")
    assert health_interval({"health.checkInterval": "-5s"}) == 0.0  # upstream: checks off
    assert health_interval({"health.checkInterval": "1d"}) == 30.0  # upstream: the default
    assert duration("1m30s") == 90.0 and duration("2.5") == 2.5 and duration("2µs") == 2e-6
    with pytest.raises(argparse.ArgumentTypeError, match="must be positive"):
        duration("0s")
    assert shim_settings.parse({"service.volumeBindTimeout": "1m30s"}).volume_bind_timeout == 90.0
    with pytest.raises(ValueError, match="not a positive duration"):
        shim_settings.parse({"service.volumeBindTimeout": "-1m"})
