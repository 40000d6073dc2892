"""The collector's pause around a recovery: off while any pause holds it, then what lived on frozen."""

import gc

import pytest

from actors.heap import CollectorPause, thaw


@pytest.fixture(autouse=True)
def collector_restored():
    enabled = gc.isenabled()
    thaw()  # what importing the command froze (actors.cli), when a test module imported it
    yield
    thaw()
    if enabled:
        gc.enable()


def test_the_collector_runs_again_only_when_every_pause_has_ended():
    gc.enable()
    first, second = CollectorPause(), CollectorPause()
    assert not gc.isenabled()
    first.end(freeze=False)
    first.end(freeze=False)  # a second end of the same pause releases nothing more
    assert not gc.isenabled()
    second.end(freeze=False)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_an_ended_recovery_leaves_what_it_built_frozen_until_thawed():
    gc.enable()
    pause = CollectorPause()
    built = [[n] for n in range(1000)]  # tracked containers, as a recovery's records are
    pause.end(freeze=True)
    assert gc.isenabled() and gc.get_freeze_count() >= len(built)
    thaw()
    assert gc.get_freeze_count() == 0


def test_a_collector_switched_off_before_stays_off():
    gc.disable()
    CollectorPause().end(freeze=False)
    assert not gc.isenabled()


def test_a_pause_as_a_context_holds_the_collector_off_inside_and_ends_frozen():
    gc.enable()
    with CollectorPause():
        assert not gc.isenabled()
        built = [[n] for n in range(1000)]  # as the modules a command imports
    assert gc.isenabled() and gc.get_freeze_count() >= len(built)
